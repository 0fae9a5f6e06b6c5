import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { humanSize, sizeText } from '../../src/util/sizes.js'
import { errorMessage, fill } from '../../src/errors/render.js'

describe('sizes as people read them (decision 322)', () => {
  it('says a byte count in the largest binary unit it reaches, rounded down to one decimal', () => {
    const cases: Array<[number, string]> = [
      [0, '0 bytes'],
      [1, '1 byte'],
      [1023, '1023 bytes'],
      [1024, '1 KiB'],
      [64 * 1024, '64 KiB'],
      [1536, '1.5 KiB'],
      [8 * 1024 * 1024, '8 MiB'],
      [8 * 1024 * 1024 + 1, '8 MiB'],
      [10_000_000, '9.5 MiB'],
      [1024 * 1024 - 1, '1023.9 KiB'],
      [5 * 1024 ** 3, '5 GiB'],
      [3 * 1024 ** 4, '3 TiB'],
      [2048 * 1024 ** 4, '2048 TiB'],
    ]
    for (const [n, want] of cases) assert.equal(humanSize(n), want, String(n))
  })

  it('keeps the exact count in parentheses, in both languages', () => {
    assert.deepEqual(sizeText(8388608), { en: '8 MiB (8388608 bytes)', zh: '8 MiB（8388608 字节）' })
    assert.deepEqual(sizeText(512), { en: '512 bytes', zh: '512 字节' })
  })

  it("fills a table message's {limit:size} with it, and leaves {limit} a plain number", () => {
    assert.equal(fill('at most {limit:size}', 'en', { limit: 65536 }), 'at most 64 KiB (65536 bytes)')
    assert.equal(fill('at most {limit}', 'en', { limit: 65536 }), 'at most 65536')
    assert.equal(fill('at most {limit:size}', 'en', { limit: 'x' }), 'at most x')
    assert.equal(errorMessage('FILE_TOO_LARGE', 'en', { limit: 16 * 1024 * 1024 }), 'File too large; the maximum is 16 MiB (16777216 bytes)')
    assert.equal(errorMessage('FILE_TOO_LARGE', 'zh', { limit: 16 * 1024 * 1024 }), '文件过大，最大 16 MiB（16777216 字节）')
    assert.equal(errorMessage('KV_ENTRY_TOO_LARGE', 'en', { limit: 1024 * 1024 }), "Entry exceeds the account's size limit of 1 MiB (1048576 bytes)")
  })
})

import { describe, it, before, after, mock } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import crypto from 'node:crypto'
import { spawnSync } from 'node:child_process'
import { createLocalBlobStore } from '../../src/storage/local.js'
import { createOpenFiles, defaultOpenFilesMax } from '../../src/storage/open-files.js'
import type { BlobStore } from '../../src/storage/blob-store.js'

/** Descriptors of this process open on files under `dir` (what /proc says). */
const openUnder = (dir: string): number =>
  fs.readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return fs.readlinkSync(`/proc/self/fd/${fd}`).startsWith(dir)
    } catch {
      return false
    }
  }).length
/** Whether this process has `fd` open on a file under `dir`. */
const openOn = (fd: number, dir: string): boolean => {
  try {
    return fs.readlinkSync(`/proc/self/fd/${fd}`).startsWith(dir)
  } catch {
    return false
  }
}
const readAll = (fd: number, size: number) => {
  const b = Buffer.alloc(size)
  fs.readSync(fd, b, 0, size, 0)
  return b
}

describe('open-file cache of blob files', () => {
  let root: string
  let blobs: BlobStore
  before(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-open-files-'))
    blobs = createLocalBlobStore(root)
  })
  after(() => fs.rmSync(root, { recursive: true, force: true }))

  it('keeps at most `max` descriptors, closing the ones it evicts', async () => {
    const files = createOpenFiles({ max: 4 })
    const stored = []
    for (let i = 0; i < 10; i++) stored.push(await blobs.put(Buffer.from(`blob ${i} ${crypto.randomUUID()}`)))
    for (const b of stored) {
      const f = await blobs.localFile(b.digest)
      const o = files.openSync(b.digest, f!.path, f!.size)!
      assert.ok(readAll(o.fd, o.size).equals(await blobs.read(b.digest)))
    }
    assert.equal(files.size(), 4)
    assert.equal(openUnder(root), 4, 'evicted descriptors are closed')
    files.closeAll()
    assert.equal(openUnder(root), 0)
  })

  it('never serves a replaced or deleted blob: keyed by digest, a gone file is not reopened, forget closes', async () => {
    const files = createOpenFiles({ max: 8 })
    const a = await blobs.put(Buffer.from(`version A ${crypto.randomUUID()}`))
    const b = await blobs.put(Buffer.from(`version B, longer ${crypto.randomUUID()}`))
    const fa = (await blobs.localFile(a.digest))!
    const oa = files.openSync(a.digest, fa.path, fa.size)!
    // a replaced file has a new digest: its own entry, its own bytes
    const fb = (await blobs.localFile(b.digest))!
    const ob = files.openSync(b.digest, fb.path, fb.size)!
    assert.notEqual(oa.fd, ob.fd)
    assert.equal(files.get(b.digest), ob)
    assert.ok(readAll(ob.fd, ob.size).equals(await blobs.read(b.digest)))
    // a deleted blob: the store has no file, and a cache without an entry does not find one
    await blobs.delete(a.digest)
    files.forget(a.digest)
    assert.equal(oa.closed, true)
    assert.equal(openOn(oa.fd, root) && fs.readlinkSync(`/proc/self/fd/${oa.fd}`).includes(a.digest), false)
    assert.equal(files.get(a.digest), undefined)
    assert.equal(files.openSync(a.digest, fa.path, fa.size), null, 'the unlinked file is not opened again')
    await assert.rejects(blobs.localFile(a.digest))
    files.closeAll()
  })

  it('closes a descriptor left unused for `inactiveMs`, so a blob deleted elsewhere gives its space back', async (t) => {
    // the sweep's interval runs on mocked time: a loaded machine cannot stretch the 20 ms steps
    mock.timers.enable({ apis: ['setInterval'] })
    t.after(() => mock.timers.reset())
    const files = createOpenFiles({ max: 8, inactiveMs: 100 })
    const idle = await blobs.put(Buffer.from(`idle ${crypto.randomUUID()}`))
    const busy = await blobs.put(Buffer.from(`busy ${crypto.randomUUID()}`))
    const fi = (await blobs.localFile(idle.digest))!
    const fb = (await blobs.localFile(busy.digest))!
    const oi = files.openSync(idle.digest, fi.path, fi.size)!
    const ob = files.openSync(busy.digest, fb.path, fb.size)!
    // deleted by someone who does not know this cache (the sweeper, another instance): the
    // unlinked file lives on while a descriptor holds it
    await blobs.delete(idle.digest)
    assert.ok(fs.readlinkSync(`/proc/self/fd/${oi.fd}`).endsWith('(deleted)'))
    // the busy file is read every 20 ms, the idle one never, for four intervals
    for (let i = 0; i < 20; i++) {
      assert.equal(files.get(busy.digest), ob)
      mock.timers.tick(20)
    }
    assert.equal(oi.closed, true, 'the idle descriptor was closed')
    assert.equal(files.get(idle.digest), undefined)
    assert.equal(files.stats.inactive, 1)
    assert.equal(ob.closed, false, 'a descriptor in use stays open')
    assert.ok(readAll(ob.fd, ob.size).equals(await blobs.read(busy.digest)))
    assert.equal(openUnder(root), 1, 'only the busy file is open')
    files.closeAll()
    assert.equal(openUnder(root), 0)
  })
})

describe('open-file cache: its default size', () => {
  it('takes half of the limit, at most 65,536, leaving 4,096 or three quarters of a small limit', () => {
    const cases: Array<[number, number]> = [
      [400, 100],
      [1024, 256],
      [4096, 1024],
      [8000, 3904],
      [8192, 4096],
      [20000, 10000],
      [65536, 32768],
      [1048576, 65536],
      [Infinity, 65536],
    ]
    for (const [limit, max] of cases) assert.equal(defaultOpenFilesMax(limit), max, `limit ${limit}`)
  })

  it('keeps at most a quarter of a small open-file limit open, so connections can still be accepted', () => {
    // a child with a limit of 400 loads the TypeScript source through tsx, as the tests run
    const moduleUrl = new URL('../../src/storage/open-files.ts', import.meta.url).href
    const r = spawnSync(
      'bash',
      [
        '-c',
        `ulimit -n 400 && "${process.execPath}" --import tsx --input-type=module -e 'const m = await import("${moduleUrl}"); console.log(m.createOpenFiles().max)'`,
      ],
      { encoding: 'utf8' },
    )
    assert.equal(r.status, 0, r.stderr)
    assert.equal(r.stdout.trim(), '100')
  })

  it('sizes itself from the process limit it runs under', () => {
    // 8,000 where the hard limit allows it (3,904: 4,096 left free), else the hard limit itself
    const moduleUrl = new URL('../../src/storage/open-files.ts', import.meta.url).href
    const r = spawnSync(
      'bash',
      [
        '-c',
        `{ ulimit -n 8000 2>/dev/null || ulimit -n "$(ulimit -Hn)"; } && echo "$(ulimit -n)" && "${process.execPath}" --import tsx --input-type=module -e 'const m = await import("${moduleUrl}"); console.log(m.createOpenFiles().max)'`,
      ],
      { encoding: 'utf8' },
    )
    assert.equal(r.status, 0, r.stderr)
    const [limit, max] = r.stdout.trim().split('\n').map(Number)
    assert.equal(max, defaultOpenFilesMax(limit))
  })
})

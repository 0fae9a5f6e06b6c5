import assert from 'node:assert/strict'
import type { Res } from './server.js'

/**
 * Asserts an error answer of the service, in the format its route uses:
 * - a number: format A, `{success:false, error_code, error_type, message, solution, doc_link}`;
 * - 'plain': image hosting and hosted data, `{success:false, message}` with no code;
 * - any other string: format B (single-file upload), `{success:false, error_code: 'NO_FILE', message}`.
 */
export function expectError(r: Res, status: number, code: number | string): void {
  assert.equal(r.status, status, `${r.status} ${r.text.slice(0, 300)}`)
  assert.equal(r.json?.success, false, r.text.slice(0, 300))
  assert.equal(typeof r.json.message, 'string')
  assert.ok(r.json.message.length > 0, 'a message for people')
  if (code === 'plain') {
    assert.equal(r.json.error_code, undefined, 'plain errors carry no code')
    return
  }
  assert.equal(r.json.error_code, code, r.text.slice(0, 300))
  if (typeof code === 'number') for (const k of ['error_type', 'solution', 'doc_link']) assert.equal(typeof r.json[k], 'string', k)
}

/**
 * Asserts a refusal whose exact status and code the row does not pin down (a body the parser
 * refuses, a media type no route takes): a 4xx, never a 500, in the `{success:false}` shape.
 */
export function expectClientError(r: Res): void {
  assert.ok(r.status >= 400 && r.status < 500, `${r.status} ${r.text.slice(0, 300)}`)
  assert.equal(r.json?.success, false, r.text.slice(0, 300))
}

/** A short test name for a request body: its JSON, cut to `max` characters. */
export function rowLabel(body: unknown, max = 90): string {
  const s = typeof body === 'string' ? body : JSON.stringify(body)
  return s.length > max ? `${s.slice(0, max - 1)}…` : s
}

/**
 * Asserts a refusal said whole in each language: the exact Chinese message with no
 * Accept-Language (the default) and the exact English one with `accept-language: en`, with the
 * same status and code (any format `expectError` takes). `wordless`: the Chinese message names
 * nothing (no domain, field or value), so no English word may be left in it.
 */
export async function expectErrorInBoth(
  send: (headers: Record<string, string>) => Promise<Res>,
  status: number,
  code: number | string,
  zh: string,
  en: string,
  wordless = false,
): Promise<void> {
  const inZh = await send({})
  expectError(inZh, status, code)
  assert.equal(inZh.json.message, zh)
  if (wordless) assert.doesNotMatch(inZh.json.message, /[A-Za-z]{4,}/)
  const inEn = await send({ 'accept-language': 'en' })
  expectError(inEn, status, code)
  assert.equal(inEn.json.message, en)
}

/**
 * The success counterpart of `expectErrorInBoth`: the same request (made afresh by `send` for
 * each language) answers `status` with `success: true` and the exact Chinese message with no
 * Accept-Language, the exact English one with `accept-language: en`.
 */
export async function expectSuccessInBoth(send: (headers: Record<string, string>) => Promise<Res>, status: number, zh: string, en: string): Promise<void> {
  for (const [headers, message] of [
    [{}, zh],
    [{ 'accept-language': 'en' }, en],
  ] as const) {
    const r = await send(headers)
    assert.equal(r.status, status, `${r.status} ${r.text.slice(0, 300)}`)
    assert.equal(r.json?.success, true, r.text.slice(0, 300))
    assert.equal(r.json.message, message, JSON.stringify(headers))
  }
}

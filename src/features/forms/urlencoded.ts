import type { Text } from '../../errors/text.js'
import { bad } from './fields.js'

/** The control field a browser fills with the encoding it used for the form (HTML `_charset_`). */
export const CHARSET_FIELD = '_charset_'

/** `a=b&c=d` bytes as [name, value] byte pairs: `+` is a space, `%XX` a byte (the URL standard's parser). */
function byteTuples(body: Buffer): Array<[Buffer, Buffer]> {
  const out: Array<[Buffer, Buffer]> = []
  const unescape = (b: Buffer) => {
    const r = Buffer.alloc(b.length)
    let n = 0
    for (let i = 0; i < b.length; i++) {
      const c = b[i]
      const hex = c === 0x25 ? b.toString('latin1', i + 1, i + 3) : ''
      if (/^[0-9A-Fa-f]{2}$/.test(hex)) {
        r[n++] = Number.parseInt(hex, 16)
        i += 2
      } else r[n++] = c === 0x2b ? 0x20 : c
    }
    return r.subarray(0, n)
  }
  let start = 0
  while (start <= body.length) {
    let end = body.indexOf(0x26, start)
    if (end === -1) end = body.length
    const seq = body.subarray(start, end)
    if (seq.length > 0) {
      const eq = seq.indexOf(0x3d)
      out.push(eq === -1 ? [unescape(seq), Buffer.alloc(0)] : [unescape(seq.subarray(0, eq)), unescape(seq.subarray(eq + 1))])
    }
    start = end + 1
  }
  return out
}

/** The decoder of a charset label (WHATWG labels: `iso-8859-1`, `gbk`, `shift_jis`, ...); UTF-16 is read as UTF-8, as browsers send it. */
function decoderFor(label: string, from: Text): TextDecoder {
  try {
    const d = new TextDecoder(label.trim(), { fatal: true })
    return d.encoding.startsWith('utf-16') ? new TextDecoder('utf-8', { fatal: true }) : d
  } catch {
    const name = label.slice(0, 40)
    throw bad({ zh: `${from.zh} "${name}" 是未知的字符编码`, en: `${from.en} names an unknown character encoding "${name}"` })
  }
}

/**
 * The fields of an `application/x-www-form-urlencoded` body, in order, a repeated name giving
 * a list. The bytes are decoded with the encoding the sender names: the `charset` of the
 * Content-Type, else the `_charset_` field a browser fills in (a page in GBK or Shift_JIS,
 * or `accept-charset`, sends those bytes), else UTF-8 (decodeFields).
 */
export function parseUrlEncoded(body: Buffer, contentType: string | undefined): Map<string, unknown> {
  const declared = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType ?? '')?.[1]
  return decodeFields(byteTuples(body), declared ? { label: declared, from: { zh: 'Content-Type 的 charset', en: 'the Content-Type charset' } } : undefined)
}

/**
 * Submitted [name, value] byte pairs as fields, in order, a repeated name giving a list: decoded
 * with `declared` when given, else the encoding the `_charset_` field names, else UTF-8. Bytes
 * that are not valid in that encoding are a 400 naming the fix, never stored as `%E9` or
 * U+FFFD. A name given as text was decoded as UTF-8 by its parser (multipart): one holding
 * U+FFFD lost its bytes on the way, and is refused too.
 */
export function decodeFields(pairs: Array<[Buffer | string, Buffer]>, declared?: { label: string; from: Text }): Map<string, unknown> {
  const hint = pairs.find(([n]) => (typeof n === 'string' ? n : n.toString('latin1')) === CHARSET_FIELD)?.[1].toString('latin1')
  const dec = declared
    ? decoderFor(declared.label, declared.from)
    : hint
      ? decoderFor(hint, { zh: `${CHARSET_FIELD} 字段`, en: `the ${CHARSET_FIELD} field` })
      : new TextDecoder('utf-8', { fatal: true })
  const invalid = () =>
    bad({
      zh: `表单数据不是有效的 ${dec.encoding}：请以 UTF-8 发送（<form accept-charset="UTF-8">），或加上 <input type="hidden" name="${CHARSET_FIELD}">，让浏览器说明所用的编码`,
      en: `the form data is not valid ${dec.encoding}: send it as UTF-8 (<form accept-charset="UTF-8">), or add <input type="hidden" name="${CHARSET_FIELD}"> so the browser names its encoding`,
    })
  const text = (b: Buffer | string) => {
    if (typeof b === 'string') {
      if (b.includes('\uFFFD'))
        throw bad({
          zh: `字段名 "${b.slice(0, 64)}" 不是有效的 UTF-8：请使用 ASCII 字段名，或以 UTF-8 发送表单`,
          en: `the field name "${b.slice(0, 64)}" is not valid UTF-8: use ASCII field names, or send the form as UTF-8`,
        })
      return b
    }
    try {
      return dec.decode(b)
    } catch {
      throw invalid()
    }
  }
  const out = new Map<string, unknown>()
  for (const [n, v] of pairs) {
    const name = text(n)
    const value = text(v)
    const prev = out.get(name)
    out.set(name, prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value])
  }
  return out
}

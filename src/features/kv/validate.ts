/** Input rules of the key-value store: keys, values, tags, ttl, bodies (no I/O). */
import { AppError } from '../../errors/app-error.js'
import type { Text } from '../../errors/text.js'
import { parseEntityTags } from '../../http/conditional.js'
import { isWellFormed } from '../../util/unicode.js'
import { DATA_TYPES, KV_LIMITS, type DataType, type IncrInput, type StoreInput } from './schemas.js'

export const KEY_RE = /^[A-Za-z][A-Za-z0-9_-]*$/
// C0 and C1 control characters (U+0000 included): never in tags
const CONTROL_RE = /[\u0000-\u001f\u007f-\u009f]/

/** 400 / 1106 naming what is wrong, in both languages (the answer picks one). */
export const invalid = (detail: Text) => new AppError('INVALID_PARAMETER', { params: { detail } })

// `value` as checkString names it (Chinese puts no space before the next word)
const VALUE: Text = { zh: 'value ', en: 'value' }
const VALUE_REQUIRED: Text = { zh: '缺少 value', en: 'value is required' }

/** 1601 (length, checked first) and 1606 (format) for a key being written. */
export function checkKey(key: string): void {
  if (key.length > KV_LIMITS.keyMaxChars) throw new AppError('KV_KEY_TOO_LONG')
  if (!KEY_RE.test(key)) throw new AppError('KV_KEY_FORMAT')
}

/**
 * A key to look up (get, delete, public reads, old_key): legacy keys that break today's
 * format stay reachable, but a string that no entry can have (too long, U+0000, unpaired
 * surrogate) answers 1604 without reaching the database.
 */
export function lookupKey(key: unknown, name = 'key'): string {
  if (Array.isArray(key)) throw invalid({ zh: `${name} 只能给一次`, en: `${name} must be given once` })
  if (typeof key !== 'string' || key === '') throw invalid({ zh: `缺少 ${name}`, en: `${name} is required` })
  if (key.length > KV_LIMITS.lookupKeyMaxChars || key.includes('\u0000') || !isWellFormed(key)) throw new AppError('KV_KEY_NOT_FOUND')
  return key
}

/** A condition on an entry's current version (0: no live entry), which a write must meet. */
export type VersionCheck = (current: number) => boolean

/** Whether an entity tag names `version` (the ETag of a KV entry is its version, quoted). */
const namesVersion = (tag: string, version: number) => version > 0 && tag === `"${version}"`

/**
 * The preconditions of a write from its If-Match / If-None-Match fields (RFC 9110 13.1), on
 * the entry's version, whose ETag is `"{version}"`: If-Match `*` = the entry exists, else one
 * of the listed strong tags names its version (a weak tag never matches, as RFC 9110 asks of
 * If-Match); If-None-Match `*` = it does not exist, else no listed tag, weak or strong, names
 * it. Undefined without either field. A field that is not `*` or a list of quoted tags is
 * 400 / 1106: a condition is never ignored.
 */
export function versionCondition(ifMatch: unknown, ifNoneMatch: unknown): VersionCheck | undefined {
  const checks: VersionCheck[] = []
  for (const [name, field] of [
    ['If-Match', ifMatch],
    ['If-None-Match', ifNoneMatch],
  ] as const) {
    if (field === undefined) continue
    const tags = typeof field === 'string' ? parseEntityTags(field) : null
    if (tags === null)
      throw invalid({
        zh: `${name} 须为 * 或带引号的实体标签列表，如 "3"（条目的 ETag 是加引号的版本号）`,
        en: `${name} must be * or a list of quoted entity tags such as "3" (an entry's ETag is its version, quoted)`,
      })
    if (name === 'If-Match') checks.push(tags === '*' ? (v) => v > 0 : (v) => tags.some((t) => !t.weak && namesVersion(t.tag, v)))
    else checks.push(tags === '*' ? (v) => v === 0 : (v) => !tags.some((t) => namesVersion(t.tag, v)))
  }
  if (checks.length === 0) return undefined
  return (v) => checks.every((c) => c(v))
}

/**
 * A key bound of a list, `prefix` or `after` (named by `name`): undefined when absent or empty
 * (every key). Any other string bounds keys byte by byte, legacy keys included; one no key
 * can meet simply matches nothing. Given twice or not Unicode (an unpaired surrogate): 400 / 1106.
 */
export function listBound(value: unknown, name: 'prefix' | 'after'): string | undefined {
  if (value === undefined || value === '') return undefined
  if (Array.isArray(value)) throw invalid({ zh: `${name} 只能给一次`, en: `${name} must be given once` })
  if (typeof value !== 'string') throw invalid({ zh: `${name} 须为字符串`, en: `${name} must be a string` })
  checkString(value, { zh: `${name} `, en: name })
  return value
}

/** `where` names the string in both languages (`prefix`, a value's member name, a tag). */
function checkString(s: string, where: Text): void {
  if (s.includes('\u0000')) throw invalid({ zh: `${where.zh}包含 U+0000，存储无法保存`, en: `${where.en} contains U+0000, which the store cannot keep` })
  if (!isWellFormed(s))
    throw invalid({
      zh: `${where.zh}包含不成对的 UTF-16 代理项，不是有效的 Unicode`,
      en: `${where.en} contains an unpaired UTF-16 surrogate, which is not valid Unicode`,
    })
}

/**
 * Checks a JSON value without recursion: nesting depth, finite numbers, and strings (values
 * and member names) free of U+0000 and unpaired surrogates. Same answer on both engines.
 */
export function checkJsonValue(value: unknown): void {
  const stack: Array<[unknown, number]> = [[value, 0]]
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!
    if (typeof v === 'string') checkString(v, VALUE)
    else if (typeof v === 'number') {
      if (!Number.isFinite(v))
        throw invalid({ zh: 'value 含有超出范围的数字（数字须为有限的双精度数）', en: 'value holds a number out of range (numbers must be finite doubles)' })
    } else if (v !== null && typeof v === 'object') {
      if (depth + 1 > KV_LIMITS.maxDepth)
        throw invalid({ zh: `value 的嵌套超过 ${KV_LIMITS.maxDepth} 层`, en: `value nests deeper than ${KV_LIMITS.maxDepth} levels` })
      if (Array.isArray(v)) for (const item of v) stack.push([item, depth + 1])
      else {
        for (const [name, item] of Object.entries(v)) {
          checkString(name, { zh: 'value 的成员名', en: 'value (a member name)' })
          stack.push([item, depth + 1])
        }
      }
    } else if (typeof v !== 'boolean' && v !== null) {
      throw invalid({ zh: 'value 不是 JSON 值', en: 'value is not a JSON value' })
    }
  }
}

/** Validates a value against its data_type. */
export function checkType(value: unknown, dataType: DataType): void {
  if (value === undefined) throw invalid(VALUE_REQUIRED)
  if (dataType === 'number') {
    if (typeof value !== 'number' || !Number.isFinite(value))
      throw invalid({ zh: 'data_type 为 number 时 value 须为有限的数字', en: 'value must be a finite number for data_type number' })
  } else if (dataType === 'text') {
    if (typeof value !== 'string') throw invalid({ zh: 'data_type 为 text 时 value 须为字符串', en: 'value must be a string for data_type text' })
    checkString(value, VALUE)
  } else {
    checkJsonValue(value)
  }
}

/** Validates a value against its data_type; returns the JSON text that is stored. */
export function valueText(value: unknown, dataType: DataType): string {
  checkType(value, dataType)
  return JSON.stringify(value)
}

export function checkTags(tags: unknown): string[] {
  if (!Array.isArray(tags)) throw invalid({ zh: 'tags 须为字符串数组', en: 'tags must be an array of strings' })
  if (tags.length > KV_LIMITS.tagsMax) throw invalid({ zh: `最多 ${KV_LIMITS.tagsMax} 个标签`, en: `at most ${KV_LIMITS.tagsMax} tags` })
  for (const t of tags) {
    if (typeof t !== 'string' || t.length === 0 || [...t].length > KV_LIMITS.tagMaxChars) {
      throw invalid({
        zh: `每个标签须为 1 到 ${KV_LIMITS.tagMaxChars} 个字符的字符串`,
        en: `each tag must be a string of 1 to ${KV_LIMITS.tagMaxChars} characters`,
      })
    }
    if (CONTROL_RE.test(t)) throw invalid({ zh: '标签不能包含控制字符', en: 'tags cannot contain control characters' })
    checkString(t, { zh: '标签', en: 'a tag' })
  }
  return tags as string[]
}

function checkTtl(ttl: unknown): void {
  if (ttl === undefined || ttl === null) return
  if (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < 1 || ttl > KV_LIMITS.ttlMaxSeconds) {
    throw invalid({
      zh: `ttl 须为 1 到 ${KV_LIMITS.ttlMaxSeconds} 秒的整数，或 null`,
      en: `ttl must be an integer from 1 to ${KV_LIMITS.ttlMaxSeconds} seconds, or null`,
    })
  }
}

const NOT_OBJECT: Text = { zh: '请求体须为 JSON 对象', en: 'the body must be a JSON object' }

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

function checkKeyField(v: Record<string, unknown>): string {
  if (v.key === undefined || v.key === null) throw invalid({ zh: '缺少 key', en: 'key is required' })
  if (typeof v.key !== 'string') throw invalid({ zh: 'key 须为字符串', en: 'key must be a string' })
  return v.key
}

/**
 * The store body, type by type and without coercion (`"1"` is never a number and `0` never
 * null): the route's strict schema already checked this shape; the service checks it again
 * for any other caller. Rules with their own codes (key length and format, sizes) come after.
 */
export function checkStoreInput(body: unknown): StoreInput {
  if (!isObject(body)) throw invalid(NOT_OBJECT)
  const key = checkKeyField(body)
  if (!('value' in body) || body.value === undefined) throw invalid(VALUE_REQUIRED)
  const { data_type, is_public, old_key, version, if_updated_at, ttl, tags, public_incr } = body
  if (data_type !== undefined && !(DATA_TYPES as readonly unknown[]).includes(data_type)) {
    throw invalid({ zh: `data_type 须为以下值之一：${DATA_TYPES.join('、')}`, en: `data_type must be one of ${DATA_TYPES.join(', ')}` })
  }
  if (is_public !== undefined && typeof is_public !== 'boolean') throw invalid({ zh: 'is_public 须为 true 或 false', en: 'is_public must be true or false' })
  checkPublicIncrFlag(public_incr)
  if (old_key !== undefined && typeof old_key !== 'string') throw invalid({ zh: 'old_key 须为字符串', en: 'old_key must be a string' })
  if (version !== undefined && (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 0)) {
    throw invalid({ zh: 'version 须为 >= 0 的整数', en: 'version must be an integer >= 0' })
  }
  if (if_updated_at !== undefined && typeof if_updated_at !== 'string')
    throw invalid({ zh: 'if_updated_at 须为字符串，格式同 updated_at 的返回值', en: 'if_updated_at must be a string as returned in updated_at' })
  checkTtl(ttl)
  return {
    key,
    value: body.value,
    data_type: data_type as DataType | undefined,
    tags: tags as string[] | undefined,
    is_public,
    old_key,
    version,
    if_updated_at,
    ttl: ttl as number | null | undefined,
    public_incr: public_incr as boolean | undefined,
  }
}

/** The incr body, without coercion. */
export function checkIncrInput(body: unknown): IncrInput {
  if (!isObject(body)) throw invalid(NOT_OBJECT)
  const key = checkKeyField(body)
  if (body.by !== undefined && (typeof body.by !== 'number' || !Number.isFinite(body.by)))
    throw invalid({ zh: 'by 须为有限的数字', en: 'by must be a finite number' })
  checkTtl(body.ttl)
  checkPublicIncrFlag(body.public_incr)
  return { key, by: body.by, ttl: body.ttl as number | null | undefined, public_incr: body.public_incr as boolean | undefined }
}

function checkPublicIncrFlag(v: unknown): void {
  if (v !== undefined && typeof v !== 'boolean') throw invalid({ zh: 'public_incr 须为 true 或 false', en: 'public_incr must be true or false' })
}

/**
 * A visitor's increment body: none (an empty body) or `{delta}` with delta 1 or -1 (a like
 * and its undo), default 1; any other field is refused, so `{"by": 5}` is never taken for 1.
 */
export function checkPublicIncrInput(body: unknown): { delta: 1 | -1 } {
  if (body === undefined || body === null) return { delta: 1 }
  if (!isObject(body)) throw invalid(NOT_OBJECT)
  const other = Object.keys(body).find((k) => k !== 'delta')
  if (other !== undefined)
    throw invalid({
      zh: `不支持字段 ${other}：只能发送 delta（1 或 -1）`,
      en: `${other} is not a field of a public increment: only delta (1 or -1) may be sent`,
    })
  if (body.delta === undefined || body.delta === 1 || body.delta === -1) return { delta: body.delta === -1 ? -1 : 1 }
  throw invalid({ zh: 'delta 须为 1 或 -1', en: 'delta must be 1 or -1' })
}

const ISO_RE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/

/**
 * Parses an ISO 8601 timestamp (as the API returns them) to epoch ms; null if malformed or if
 * a field is out of range: the parsed date must give back the fields as written (no month 13,
 * hour 99 or 31 February rolled over into another date), and the offset is at most 23:59.
 */
export function parseIsoMs(s: string): number | null {
  const m = ISO_RE.exec(s)
  if (!m) return null
  const [y, mo, d, h, mi, se] = m.slice(1, 7).map(Number)
  const frac = m[7]
  const off = m[8]
  const ms = Number((frac ?? '').padEnd(3, '0').slice(0, 3))
  // setUTCFullYear, not Date.UTC, which reads years 0-99 as 1900-1999
  const date = new Date(0)
  date.setUTCFullYear(y, mo - 1, d)
  date.setUTCHours(h, mi, se, ms)
  const same =
    date.getUTCFullYear() === y &&
    date.getUTCMonth() === mo - 1 &&
    date.getUTCDate() === d &&
    date.getUTCHours() === h &&
    date.getUTCMinutes() === mi &&
    date.getUTCSeconds() === se
  if (!same) return null
  let t = date.getTime()
  if (off !== 'Z') {
    const oh = Number(off.slice(1, 3))
    const om = Number(off.slice(4, 6))
    if (oh > 23 || om > 59) return null
    t -= (off[0] === '-' ? -1 : 1) * (oh * 60 + om) * 60_000
  }
  return Number.isFinite(t) ? t : null
}

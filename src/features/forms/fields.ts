import { AppError } from '../../errors/app-error.js'
import type { Text } from '../../errors/text.js'
import { isWellFormed } from '../../util/unicode.js'

/** Field types a form may declare (decisions.md). */
export const FIELD_TYPES = ['text', 'email', 'number', 'textarea', 'select', 'checkbox', 'url', 'tel', 'date', 'file'] as const
export type FieldType = (typeof FIELD_TYPES)[number]

/** One item of fields_config, as stored and answered. */
export interface FieldDef {
  name: string
  label: string | null
  type: FieldType
  required: boolean
  options?: string[]
}

/** Submitted value after validation (what is stored in a submission's `data`). */
export type FieldValue = string | number | boolean | string[] | Array<string | number | boolean>

export const MAX_FIELDS = 50
export const MAX_OPTIONS = 100
/** Field names: a letter or digit (any script), then letters, digits, marks, `_ . -`; up to 64. */
export const FIELD_NAME_RE = /^[\p{L}\p{N}][\p{L}\p{N}\p{M}_.-]{0,63}$/u
/** Longest value of a one-line field (textarea is bounded by the body cap only). */
const MAX_LINE_CHARS = 10_000

/** 400 / 1106 naming what is wrong, in both languages (the answer picks one); for every forms module. */
export const bad = (detail: Text) => new AppError('INVALID_PARAMETER', { params: { detail } })
/**
 * 400 / 1614 about one field, in words a visitor reads: "The field "email" must be an email
 * address." (`detail`: what follows the field's name, a sentence's end with its full stop).
 * The machine-readable part stays: the code and `field` (decision 323).
 */
export const mismatch = (field: string, detail: Text) => mismatchSaid(field, { zh: `字段“${field}”${detail.zh}`, en: `The field "${field}" ${detail.en}` })
/** 400 / 1614 about `field` in a sentence of its own (one that does not start with the field). */
export const mismatchSaid = (field: string, sentence: Text) => new AppError('FORM_FIELDS_MISMATCH', { params: { field, detail: sentence }, extra: { field } })

/**
 * Text the database can store identically on both engines: PostgreSQL refuses U+0000 and a
 * lone surrogate would silently become U+FFFD, so both are refused up front.
 */
export function textProblem(s: string): Text | null {
  if (s.includes('\u0000')) return NUL
  if (!isWellFormed(s)) return SURROGATE
  return null
}
const NUL: Text = { zh: '不能包含 NUL 字符（\\u0000）', en: 'must not contain the NUL character (\\u0000)' }
const SURROGATE: Text = { zh: '不能包含孤立的 UTF-16 代理项', en: 'must not contain a lone UTF-16 surrogate' }

/** Refuses text that cannot be stored (400 naming the parameter). */
export function checkText(param: string, s: string): void {
  const p = textProblem(s)
  if (p) throw bad({ zh: `${param} ${p.zh}`, en: `${param} ${p.en}` })
}

/** Validates and normalises fields_config (400 naming the item and key on any problem). */
export function parseFieldsConfig(v: unknown): FieldDef[] {
  if (v === undefined || v === null) return []
  if (!Array.isArray(v)) throw bad({ zh: 'fields_config 须为数组', en: 'fields_config must be an array' })
  if (v.length > MAX_FIELDS) throw bad({ zh: `fields_config 超过 ${MAX_FIELDS} 个字段`, en: `fields_config has more than ${MAX_FIELDS} fields` })
  const seen = new Set<string>()
  return v.map((item, i): FieldDef => {
    const at = `fields_config[${i}]`
    if (typeof item !== 'object' || item === null || Array.isArray(item)) throw bad({ zh: `${at} 须为对象`, en: `${at} must be an object` })
    const o = item as Record<string, unknown>
    if (typeof o.name !== 'string') throw bad({ zh: `缺少 ${at}.name（字符串）`, en: `${at}.name is required (a string)` })
    checkText(`${at}.name`, o.name)
    if (!FIELD_NAME_RE.test(o.name))
      throw bad({
        zh: `${at}.name 须为 1-64 个字母、数字、"_"、"." 或 "-"，以字母或数字开头`,
        en: `${at}.name must be 1-64 letters, digits, "_", "." or "-", starting with a letter or digit`,
      })
    if (seen.has(o.name.toLowerCase())) throw bad({ zh: `${at}.name "${o.name}" 重复出现`, en: `${at}.name "${o.name}" is used twice` })
    seen.add(o.name.toLowerCase())
    let label: string | null = null
    if (o.label !== undefined && o.label !== null) {
      if (typeof o.label !== 'string' || o.label.length > 200)
        throw bad({ zh: `${at}.label 须为最多 200 个字符的字符串`, en: `${at}.label must be a string of at most 200 characters` })
      checkText(`${at}.label`, o.label)
      label = o.label
    }
    const type = o.type ?? 'text'
    if (typeof type !== 'string' || !(FIELD_TYPES as readonly string[]).includes(type)) {
      throw bad({ zh: `${at}.type 须为以下值之一：${FIELD_TYPES.join('、')}`, en: `${at}.type must be one of ${FIELD_TYPES.join(', ')}` })
    }
    const required = o.required ?? false
    if (typeof required !== 'boolean') throw bad({ zh: `${at}.required 须为 true 或 false`, en: `${at}.required must be true or false` })
    const def: FieldDef = { name: o.name, label, type: type as FieldType, required }
    if (o.options !== undefined && o.options !== null) {
      if (type !== 'select' && type !== 'checkbox')
        throw bad({ zh: `${at}.options 只适用于 select 和 checkbox 字段`, en: `${at}.options only applies to select and checkbox fields` })
      if (!Array.isArray(o.options) || o.options.length === 0 || o.options.length > MAX_OPTIONS) {
        throw bad({ zh: `${at}.options 须为 1-${MAX_OPTIONS} 个字符串组成的数组`, en: `${at}.options must be an array of 1-${MAX_OPTIONS} strings` })
      }
      const opts = o.options.map((x, j) => {
        if ((typeof x !== 'string' && typeof x !== 'number') || String(x).length === 0 || String(x).length > 200) {
          throw bad({
            zh: `${at}.options[${j}] 须为最多 200 个字符的非空字符串`,
            en: `${at}.options[${j}] must be a non-empty string of at most 200 characters`,
          })
        }
        checkText(`${at}.options[${j}]`, String(x))
        return String(x)
      })
      if (new Set(opts).size !== opts.length) throw bad({ zh: `${at}.options 有重复项`, en: `${at}.options has duplicates` })
      def.options = opts
    } else if (type === 'select') {
      throw bad({ zh: `select 字段须有 ${at}.options`, en: `${at}.options is required for a select field` })
    }
    return def
  })
}

const TRUE_WORDS = new Set(['on', 'true', '1', 'yes', 'checked'])
const FALSE_WORDS = new Set(['off', 'false', '0', 'no', ''])
const EMAIL_RE = /^[^\s@<>()[\]\\,;:"]+@[^\s@<>()[\]\\,;:"]+\.[^\s@<>()[\]\\,;:"]+$/u
const TEL_RE = /^\+?[0-9][0-9 ().-]{1,30}$/
const NUMBER_RE = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/
const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/

/** An e-mail address as an `email` field takes it (one line: no space, no line break). */
export const isEmailAddress = (s: string) => s.length <= 254 && EMAIL_RE.test(s)

const isEmpty = (v: unknown) => v === undefined || v === null || (typeof v === 'string' && v.trim() === '') || (Array.isArray(v) && v.length === 0)

function single(def: FieldDef, v: unknown): string {
  if (Array.isArray(v)) {
    if (v.length !== 1) {
      // a <select multiple> (or boxes of one name) posted to a select: say how to declare it
      if (def.type === 'select' && v.length > 1)
        throw mismatch(def.name, {
          zh: '只能选一项。多选（<select multiple> 或同名复选框）请声明为带 options 的 checkbox 字段。',
          en: 'takes one option only. For a multiple choice (<select multiple>, boxes of one name), declare it as a checkbox field with options.',
        })
      throw mismatch(def.name, { zh: '只能有一个值。', en: 'takes a single value.' })
    }
    v = v[0]
  }
  if (typeof v === 'number' && Number.isFinite(v)) return String(v)
  if (typeof v !== 'string') throw mismatch(def.name, { zh: '须为文本。', en: 'must be text.' })
  return v
}

const notAnOption = (s: string): Text => ({ zh: `须为给出的选项之一，“${s}”不是。`, en: `must be one of its options; "${s}" is not one of them.` })

function validDate(s: string): boolean {
  const m = DATE_RE.exec(s)
  if (!m) return false
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])]
  const t = new Date(Date.UTC(y, mo - 1, d))
  return t.getUTCFullYear() === y && t.getUTCMonth() === mo - 1 && t.getUTCDate() === d
}

/** Checks one submitted value against its definition; returns the value to store. */
function fieldValue(def: FieldDef, raw: unknown): FieldValue | undefined {
  if (def.type === 'checkbox' && !def.options) {
    let b: boolean
    const v = Array.isArray(raw) && raw.length === 1 ? raw[0] : raw
    if (v === undefined || v === null) b = false
    else if (typeof v === 'boolean') b = v
    else if (typeof v === 'string' && TRUE_WORDS.has(v.trim().toLowerCase())) b = true
    else if (typeof v === 'string' && FALSE_WORDS.has(v.trim().toLowerCase())) b = false
    else if (v === 1 || v === 0) b = v === 1
    else throw mismatch(def.name, { zh: '须为复选框的值（true、false 或 on）。', en: 'must be a checkbox value (true, false or on).' })
    if (def.required && !b) throw mismatch(def.name, { zh: '为必填项，请勾选。', en: 'is required: please check it.' })
    return b
  }
  if (def.type === 'checkbox' && def.options) {
    const list = raw === undefined || raw === null ? [] : Array.isArray(raw) ? raw : [raw]
    const out: string[] = []
    for (const x of list) {
      if (typeof x !== 'string' && typeof x !== 'number') throw mismatch(def.name, { zh: '须为给出的选项。', en: 'must be among its options.' })
      const s = String(x)
      if (s === '') continue
      if (!def.options.includes(s)) throw mismatch(def.name, notAnOption(s))
      if (!out.includes(s)) out.push(s)
    }
    if (def.required && out.length === 0) throw mismatch(def.name, { zh: '为必填项，请至少选择一项。', en: 'is required: please choose at least one option.' })
    return out
  }
  if (isEmpty(raw)) {
    if (def.required) throw mismatch(def.name, { zh: '为必填项。', en: 'is required.' })
    return undefined
  }
  const s = single(def, raw)
  if (def.type !== 'textarea' && s.length > MAX_LINE_CHARS)
    throw mismatch(def.name, { zh: `最多 ${MAX_LINE_CHARS} 个字符。`, en: `must be at most ${MAX_LINE_CHARS} characters long.` })
  const t = s.trim()
  switch (def.type) {
    case 'text':
    case 'textarea':
      return s
    case 'email':
      if (!isEmailAddress(t)) throw mismatch(def.name, { zh: '须为邮箱地址。', en: 'must be an email address.' })
      return t
    case 'number': {
      if (typeof raw === 'number' && Number.isFinite(raw)) return raw
      if (!NUMBER_RE.test(t) || !Number.isFinite(Number(t))) throw mismatch(def.name, { zh: '须为数字。', en: 'must be a number.' })
      return Number(t)
    }
    case 'url': {
      let u: URL
      try {
        u = new URL(t)
      } catch {
        throw mismatch(def.name, { zh: '须为网址（URL）。', en: 'must be a web address (URL).' })
      }
      if ((u.protocol !== 'http:' && u.protocol !== 'https:') || t.length > 2048)
        throw mismatch(def.name, { zh: '须为以 http:// 或 https:// 开头的网址。', en: 'must be a web address starting with http:// or https://.' })
      return t
    }
    case 'tel':
      if (!TEL_RE.test(t)) throw mismatch(def.name, { zh: '须为电话号码。', en: 'must be a telephone number.' })
      return t
    case 'date':
      if (!validDate(t)) throw mismatch(def.name, { zh: '须为日期（YYYY-MM-DD）。', en: 'must be a date (YYYY-MM-DD).' })
      return t
    case 'select':
      if (!def.options!.includes(s)) throw mismatch(def.name, notAnOption(s))
      return s
    case 'checkbox':
      // answered above, with and without options
      throw new Error('fieldValue: checkbox reached the switch')
    case 'file':
      // a file field's files are checked in validateSubmission; text under its name is not one
      throw mismatch(def.name, { zh: '须为文件（表单须以 multipart/form-data 发送）。', en: 'must be a file (the form must be sent as multipart/form-data).' })
  }
}

/** Free-form value (a form without fields_config): text, number, boolean, or a list of them. */
function freeValue(name: string, raw: unknown): FieldValue | undefined {
  if (raw === undefined || raw === null) return undefined
  const ok = (x: unknown) => typeof x === 'string' || typeof x === 'boolean' || (typeof x === 'number' && Number.isFinite(x))
  if (Array.isArray(raw)) {
    if (!raw.every(ok)) throw mismatch(name, { zh: '须为文本、数字或布尔值的列表。', en: 'must be a list of text, numbers or booleans.' })
    return raw as Array<string | number | boolean>
  }
  if (!ok(raw)) throw mismatch(name, { zh: '须为文本、数字或布尔值。', en: 'must be text, a number or a boolean.' })
  return raw as string | number | boolean
}

/** Every string inside a value, for the storable-text check. */
const strings = (v: unknown): string[] => (typeof v === 'string' ? [v] : Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [])

/**
 * The submitted fields with list syntax read: a name ending in `[]` (PHP's and Rails' syntax
 * for a checkbox group, `<input type=checkbox name="topics[]">`) is the field without the
 * brackets and its value always a list, however many boxes were checked; a plain name given
 * too joins the same list. Other brackets (`a[b]`) and `[]` alone are names as sent
 * (decision 125).
 */
export function readListNames(body: Map<string, unknown>): Map<string, unknown> {
  const out = new Map<string, unknown>()
  for (const [sent, v] of body) {
    const list = sent.length > 2 && sent.endsWith('[]')
    const name = list ? sent.slice(0, -2) : sent
    const prev = out.get(name)
    if (prev === undefined) out.set(name, list && !Array.isArray(v) ? [v] : v)
    else out.set(name, [...(Array.isArray(prev) ? prev : [prev]), ...(Array.isArray(v) ? v : [v])])
  }
  return out
}

/**
 * The one `_` field kept in a submission, on every form: Formspree's field for the visitor's
 * e-mail address, which forms copied from there carry instead of `email` (decision 124).
 */
export const REPLY_TO = '_replyto'

/**
 * Formspree's field naming the subject of the owner's mail about a submission: a control
 * field, not stored, read by subjectOf (decision 205).
 */
export const SUBJECT = '_subject'

/** The mail subject a post asks for: its `_subject` (the first value), trimmed, unless blank; else null. */
export function subjectOf(body: Map<string, unknown>): string | null {
  const v = body.get(SUBJECT)
  const first = Array.isArray(v) ? v[0] : v
  return typeof first === 'string' && first.trim() !== '' ? first.trim() : null
}

/**
 * Netlify Forms' plumbing, which a form pasted from a Netlify site posts: the hidden
 * `form-name` (which form a post is for; here the URL says that) and the `bot-field` honeypot
 * its examples name in `netlify-honeypot`. Control fields on every form that does not declare
 * the name in fields_config (decision 136).
 */
export const NETLIFY_FORM_NAME = 'form-name'
export const NETLIFY_HONEYPOT = 'bot-field'

/**
 * The tokens a CAPTCHA widget adds to its form (reCAPTCHA, which Netlify's
 * `data-netlify-recaptcha` uses too; hCaptcha; Cloudflare Turnstile). The service has no
 * secret to check them with: control fields on every form that does not declare the name, so
 * a form pasted with its widget posts as it is, without a token of a few KB in every
 * submission (decision 253).
 */
export const CAPTCHA_FIELDS: readonly string[] = ['g-recaptcha-response', 'h-captcha-response', 'cf-turnstile-response']

/**
 * The name a form's submit button posts under when it has one (`<button name="submit"
 * value="Send">`, in any case): its label, not what the visitor wrote (decision 265).
 */
const isSubmitButton = (name: string) => name.toLowerCase() === 'submit'

/** A name that is never stored nor "unknown": `_` names but `_replyto`, and Netlify's, CAPTCHA widgets' and a submit button's undeclared ones. */
const isControlName = (name: string, defs: FieldDef[]) =>
  (name.startsWith('_') && name !== REPLY_TO) ||
  ((name === NETLIFY_FORM_NAME || name === NETLIFY_HONEYPOT || CAPTCHA_FIELDS.includes(name) || isSubmitButton(name)) && !defs.some((d) => d.name === name))

/**
 * Whether a file sent in field `name` is kept: not in a control field nor the honeypot (a
 * file there is dropped, as a text value there is never stored), nor in `_replyto`.
 */
export const keepsFile = (defs: FieldDef[], honeypot: string | null, name: string) => name !== honeypot && name !== REPLY_TO && !isControlName(name, defs)

/**
 * Names whose non-empty value marks a submission as spam: the form's `honeypot_field` and,
 * while that is set (null turns honeypots off), Netlify's `bot-field` unless declared.
 */
export function honeypotNames(defs: FieldDef[], honeypot: string | null): string[] {
  if (honeypot === null) return []
  return honeypot !== NETLIFY_HONEYPOT && isControlName(NETLIFY_HONEYPOT, defs) ? [honeypot, NETLIFY_HONEYPOT] : [honeypot]
}

/**
 * Validates submitted fields against a form's definition. Names starting with "_" (except
 * `_replyto`, kept as text), Netlify's `form-name` and `bot-field`, the CAPTCHA widgets'
 * tokens and a submit button's `submit` unless declared, and the
 * honeypot field are control fields (never stored, never "unknown"). With an empty
 * fields_config any field name is accepted. Errors: 1614 naming the field; 400 for text the
 * database cannot store, a `__proto__` name, or a submission without a value in any field.
 */
export function validateSubmission(
  defs: FieldDef[],
  honeypot: string | null,
  sent: Map<string, unknown>,
  fileFields: readonly string[] = [],
): Record<string, FieldValue> {
  const body = readListNames(sent)
  const filesSent = new Set(fileFields.filter((name) => keepsFile(defs, honeypot, name)))
  for (const name of filesSent) {
    const p = textProblem(name)
    if (p) throw bad({ zh: `字段名${p.zh}`, en: `a field name ${p.en}` })
    const def = defs.find((d) => d.name === name)
    // a form that declares its fields takes files in its `file` fields only
    if (defs.length > 0 && def === undefined)
      throw mismatchSaid(name, {
        zh: `此表单没有文件字段“${name}”（文件字段须声明为 type "file"）。`,
        en: `This form has no file field "${name}" (a file field is declared with type "file").`,
      })
    if (def !== undefined && def.type !== 'file')
      throw mismatch(name, { zh: '不接受文件（它未声明为 type "file"）。', en: 'does not take files (it is not declared with type "file").' })
    if (name.length > 64 || /[\u0000-\u001f\u007f]/.test(name))
      throw mismatchSaid(name.slice(0, 64), { zh: `“${name.slice(0, 64)}”不是有效的字段名。`, en: `"${name.slice(0, 64)}" is not a valid field name.` })
  }
  const out: Array<[string, FieldValue]> = []
  const byName = new Map(defs.map((d) => [d.name, d]))
  let count = 0
  let filled = false
  for (const [name, raw] of body) {
    const p = textProblem(name)
    if (p) throw bad({ zh: `字段名${p.zh}`, en: `a field name ${p.en}` })
    // refused on every body type, as the JSON and multipart parsers refuse it
    if (name === '__proto__') throw bad({ zh: '不允许使用字段名 "__proto__"', en: 'the field name "__proto__" is not allowed' })
    for (const s of strings(raw)) {
      const q = textProblem(s)
      if (q) throw bad({ zh: `字段 "${name}" ${q.zh}`, en: `field "${name}" ${q.en}` })
    }
    if (name === honeypot) continue
    // the visitor's address in Formspree's `_replyto`: their content, kept as a text field
    if (name === REPLY_TO) {
      const v = fieldValue({ name, label: null, type: 'text', required: false }, raw)
      if (v !== undefined) {
        out.push([name, v])
        filled = true
      }
      continue
    }
    if (isControlName(name, defs)) continue
    if (!isEmpty(raw) && !(Array.isArray(raw) && raw.every(isEmpty))) filled = true
    if (defs.length > 0) {
      if (!byName.has(name)) throw mismatchSaid(name, { zh: `此表单没有字段“${name}”。`, en: `This form has no field "${name}".` })
      continue
    }
    if (++count > MAX_FIELDS)
      throw mismatch(name, {
        zh: `超出上限：未设置 fields_config 的表单最多接受 ${MAX_FIELDS} 个字段。`,
        en: `is one too many: a form without fields_config takes at most ${MAX_FIELDS} fields.`,
      })
    if (name.length > 64 || /[\u0000-\u001f\u007f]/.test(name))
      throw mismatchSaid(name.slice(0, 64), { zh: `“${name.slice(0, 64)}”不是有效的字段名。`, en: `"${name.slice(0, 64)}" is not a valid field name.` })
    const v = freeValue(name, raw)
    if (v !== undefined) out.push([name, v])
  }
  for (const def of defs) {
    if (def.type === 'file') {
      const raw = body.get(def.name)
      if (!isEmpty(raw) && !(Array.isArray(raw) && raw.every(isEmpty))) fieldValue(def, raw)
      if (def.required && !filesSent.has(def.name)) throw mismatch(def.name, { zh: '为必填项，请附上文件。', en: 'is required: please attach a file.' })
      continue
    }
    const v = fieldValue(def, body.get(def.name))
    if (v !== undefined) out.push([def.name, v])
  }
  // as Formspree: a post with no value in any field (an empty body, `{}`, control fields only)
  // is refused, so it takes no quota and sends no notification
  if (!filled && filesSent.size === 0)
    throw bad({ zh: '提交内容为空：请至少发送一个有值的字段', en: 'the submission is empty: send at least one field with a value' })
  return Object.fromEntries(out)
}

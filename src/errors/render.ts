import type { IncomingHttpHeaders } from 'node:http'
import { ERRORS, type ErrorKey } from './codes.js'
import type { AppErrorOptions } from './app-error.js'
import { isText, type Param, type Text } from './text.js'
import { sizeText } from '../util/sizes.js'

/** How a route answers errors: the spec's format A (numeric), B (single-file upload), or plain. */
export type ErrorFormat = 'A' | 'B' | 'plain'
export type Lang = 'zh' | 'en'
export { isText, mapText, type Param, type Text } from './text.js'

/** The templates (a fixed set: the table's texts), each split once at its {placeholders}: literal, name, literal, ... */
const templates = new Map<string, string[]>()
/**
 * Fills a template's {placeholders}; a Text value gives its words in `lang`. `{limit:size}`
 * says a number of bytes as people read it, with the exact count (util/sizes.ts sizeText):
 * the one spelling of a size limit in every error message.
 */
export const fill = (text: string, lang: Lang, params: Record<string, Param> = {}): string => {
  let parts = templates.get(text)
  if (parts === undefined) templates.set(text, (parts = text.split(/\{(\w+(?::size)?)\}/)))
  if (parts.length === 1) return text
  let out = parts[0]
  for (let i = 1; i < parts.length; i += 2) {
    const [name, as] = parts[i].split(':')
    const v = params[name]
    const said = v === undefined ? `{${parts[i]}}` : typeof v === 'object' ? v[lang] : as === 'size' && typeof v === 'number' ? sizeText(v)[lang] : String(v)
    out += said + parts[i + 1]
  }
  return out
}

/**
 * Picks the response language from Accept-Language: English or Chinese, whichever it prefers;
 * `fallback` (Chinese, the spec's default, unless a route says otherwise) when it names neither.
 */
export function pickLang(acceptLanguage: string | undefined, fallback: Lang = 'zh'): Lang {
  if (!acceptLanguage) return fallback
  let best: { lang: Lang; q: number } | null = null
  for (const part of acceptLanguage.split(',')) {
    const [tag, ...opts] = part.trim().toLowerCase().split(';')
    const qOpt = opts.find((o) => o.trim().startsWith('q='))
    const q = qOpt ? Number(qOpt.trim().slice(2)) : 1
    if (!Number.isFinite(q) || q <= 0) continue
    const lang: Lang | null = tag.startsWith('zh') ? 'zh' : tag.startsWith('en') ? 'en' : null
    if (lang && (!best || q > best.q)) best = { lang, q }
  }
  return best?.lang ?? fallback
}

/**
 * The language of an answer to `req`: its Accept-Language (pickLang), else `fallback`. The one
 * reader of the header for every answer (say() in web/ builds on it; the pages' `lang` cookie
 * is read first by the pages shell only).
 */
export const langOf = (req: { headers: IncomingHttpHeaders }, fallback?: Lang): Lang => pickLang(req.headers['accept-language'], fallback)

/** The `lang` attribute of the service's own pages in each language. */
export const HTML_LANG: Record<Lang, string> = { en: 'en', zh: 'zh-CN' }

/** The message of an error in one language, with its placeholders filled. */
export function errorMessage(key: ErrorKey, lang: Lang, params?: Record<string, Param>): string {
  const d = ERRORS[key]
  return fill(lang === 'en' ? d.en : d.zh, lang, params)
}

/** The message of an error in both languages (for an answer that picks its language later). */
export const errorText = (key: ErrorKey, params?: Record<string, Param>): Text => ({ zh: errorMessage(key, 'zh', params), en: errorMessage(key, 'en', params) })

/**
 * An error's extra fields as sent in `lang`: each member of `details` given as a Text (a
 * reason, a note for people) becomes its words in `lang`; codes, names and numbers, and every
 * other field, are sent as they are.
 */
export function extraIn(extra: Record<string, unknown> | undefined, lang: Lang): Record<string, unknown> {
  const details = extra?.details
  if (extra === undefined || typeof details !== 'object' || details === null || Array.isArray(details)) return extra ?? {}
  if (!Object.values(details).some(isText)) return extra
  const said = Object.fromEntries(Object.entries(details).map(([k, v]) => [k, isText(v) ? v[lang] : v]))
  return { ...extra, details: said }
}

/** Builds the JSON body of an error in the requested format. */
export function renderError(key: ErrorKey, format: ErrorFormat, lang: Lang, options: AppErrorOptions, docBase: string): Record<string, unknown> {
  const d = ERRORS[key]
  const message = errorMessage(key, lang, options.params)
  if (format === 'plain') return { success: false, message }
  if (format === 'B' && 'stringCode' in d && d.stringCode && d.code !== 1116) {
    return { success: false, message, error_code: d.stringCode }
  }
  return {
    success: false,
    error_code: d.code,
    error_type: d.type,
    message,
    solution: fill(lang === 'en' ? d.solutionEn : d.solutionZh, lang, options.params),
    doc_link: `${docBase}/docs/errors#${d.code}`,
    ...extraIn(options.extra, lang),
  }
}

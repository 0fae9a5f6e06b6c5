import { bad, checkText } from './fields.js'
import { parseIp, v6Prefix } from '../../http/ip-key.js'

export const MAX_ALLOWED_ORIGINS = 20

/** The origin (scheme://host[:port]) of an http(s) URL, or null. */
export function originOf(url: string): string | null {
  try {
    const u = new URL(url)
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.origin : null
  } catch {
    return null
  }
}

/**
 * Validates allowed_origins: each entry is "null" (pages in an opaque origin, e.g. sandboxed
 * hosted pages) or an http(s) origin without path, query or credentials; stored normalised
 * (lower-case host, default port dropped). Empty = any origin.
 */
export function parseAllowedOrigins(v: unknown): string[] {
  if (v === undefined || v === null) return []
  if (!Array.isArray(v))
    throw bad({
      zh: 'allowed_origins 须为来源组成的数组，如 "https://example.com"（为空表示接受任何来源）',
      en: 'allowed_origins must be an array of origins such as "https://example.com" (empty = any origin)',
    })
  if (v.length > MAX_ALLOWED_ORIGINS)
    throw bad({ zh: `allowed_origins 最多 ${MAX_ALLOWED_ORIGINS} 项`, en: `allowed_origins takes at most ${MAX_ALLOWED_ORIGINS} entries` })
  const out: string[] = []
  v.forEach((x, i) => {
    if (typeof x !== 'string') throw bad({ zh: `allowed_origins[${i}] 须为字符串`, en: `allowed_origins[${i}] must be a string` })
    checkText(`allowed_origins[${i}]`, x)
    const s = x.trim()
    if (s.toLowerCase() === 'null') {
      if (!out.includes('null')) out.push('null')
      return
    }
    if (s === '*')
      throw bad({
        zh: 'allowed_origins：要接受任何来源请留空列表，不要用 "*"',
        en: 'allowed_origins: leave the list empty to accept any origin instead of "*"',
      })
    let u: URL
    try {
      u = new URL(s)
    } catch {
      throw bad({
        zh: `allowed_origins[${i}] 不是来源，来源形如 "https://example.com"`,
        en: `allowed_origins[${i}] is not an origin such as "https://example.com"`,
      })
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:')
      throw bad({ zh: `allowed_origins[${i}] 须为 http 或 https 来源`, en: `allowed_origins[${i}] must be an http or https origin` })
    if (u.username || u.password || (u.pathname !== '/' && u.pathname !== '') || u.search || u.hash || /[?#]/.test(s)) {
      throw bad({
        zh: `allowed_origins[${i}] 须为来源（scheme://host[:port]），不能带路径、查询或凭据`,
        en: `allowed_origins[${i}] must be an origin (scheme://host[:port]) without path, query or credentials`,
      })
    }
    if (!out.includes(u.origin)) out.push(u.origin)
  })
  return out
}

export interface OriginDecision {
  /** Whether the submission may be accepted. */
  allowed: boolean
  /** Value for Access-Control-Allow-Origin, or null to send none. */
  acao: string | null
}

/**
 * The CORS and origin rule of a public submit:
 * - allowed_origins empty: any origin; the Origin is echoed ("*" without one).
 * - Origin is a web origin: allowed when listed; echoed only then.
 * - Origin is "null" (sandboxed or opaque page): allowed when "null" is listed, or when a
 *   Referer is present and its origin is listed; "null" is echoed then.
 * - no Origin (not a browser's CORS request): the Referer's origin must be listed when a
 *   Referer is sent; a client sending neither (curl, servers) is accepted, since those can
 *   claim any origin anyway.
 */
export function decideOrigin(allowed: string[], origin: string | undefined, referer: string | undefined): OriginDecision {
  if (allowed.length === 0) return { allowed: true, acao: origin ?? '*' }
  const refOrigin = referer ? originOf(referer) : null
  if (origin === undefined) {
    if (referer === undefined) return { allowed: true, acao: null }
    return { allowed: refOrigin !== null && allowed.includes(refOrigin), acao: null }
  }
  if (origin === 'null') {
    const ok = allowed.includes('null') || (refOrigin !== null && allowed.includes(refOrigin))
    return { allowed: ok, acao: ok ? 'null' : null }
  }
  const o = originOf(origin)
  const ok = o !== null && allowed.includes(o)
  return { allowed: ok, acao: ok ? origin : null }
}

/**
 * The client address as stored with a submission: truncated to its network, IPv4 /24
 * ("203.0.113.0/24") and IPv6 /48 ("2001:db8:1::/48"), so no submission records a person's
 * exact address.
 */
export function ipPrefix(ip: string): string | null {
  const a = parseIp(ip)
  if (!a) return null
  return a.v === 4 ? `${a.bytes.slice(0, 3).join('.')}.0/24` : v6Prefix(a.groups, 3, 48)
}

/** Formspree's field naming where a browser lands after its post (decision 124). */
export const NEXT_FIELD = '_next'

/**
 * Where a browser post's `_next` sends the visitor, or null to ignore it: an http(s) URL (a
 * relative one resolved against the submitting page) on the submitting page's own origin
 * (Origin, else Referer), on an origin of allowed_origins, or on the origin of the form's
 * redirect_url. A cross-site post carries its own page's Origin, so the field can send a
 * visitor back to that site only, never through the service to a third one.
 */
export function nextTarget(
  raw: unknown,
  allowed: string[],
  redirectUrl: string | null,
  origin: string | undefined,
  referer: string | undefined,
): string | null {
  const v = Array.isArray(raw) ? raw[0] : raw
  if (typeof v !== 'string') return null
  const s = v.trim()
  if (s === '' || s.length > 2048 || /[\u0000-\u001f\u007f]/.test(s)) return null
  const refOrigin = referer ? originOf(referer) : null
  const page = (origin !== undefined && origin !== 'null' ? originOf(origin) : null) ?? refOrigin
  let u: URL
  try {
    u = new URL(s, refOrigin !== null ? referer : (page ?? undefined))
  } catch {
    return null
  }
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.username || u.password) return null
  const ok = [page, ...allowed, redirectUrl ? originOf(redirectUrl) : null]
  return ok.includes(u.origin) ? u.href : null
}

import crypto from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { performance } from 'node:perf_hooks'
import type { Deps } from '../../deps.js'
import { verifyPassword } from '../../auth/passwords.js'
import { MAX_PASSWORD_BYTES } from '../../auth/account-rules.js'
import { createInvalidatedCache } from '../../infra/invalidated-cache.js'
import { HTML_LANG, langOf, type Lang } from '../../errors/render.js'
import { clientIp, isHttps } from '../../http/origin.js'
import { ipLimitKey } from '../../http/ip-key.js'
import type { Access, AccessPoint } from '../../http/site-hooks.js'
import type { WindowRule } from '../../limits/tiers.js'
import { createOutcomeLimits } from '../../limits/in-flight.js'
import { escapeHtml } from '../../util/html.js'
import { decodeOnce, upperEscapes } from '../../util/percent-escapes.js'
import type { DomainsStore } from './store.js'
import { projectOf } from '../sites/paths.js'

/** Bus channel of visitor access changes: the message is the username (FLUSH_ALL: all). */
export const ACCESS_CHANNEL = 'site-access'

/** A visitor cookie is good for this long (or until the name expires, if sooner). */
const COOKIE_MAX_AGE_S = 30 * 24 * 3600
/** Wrong passwords: per client address and name, and per name from anywhere. */
const PER_CLIENT: WindowRule[] = [{ name: 'visitor-password', kind: 'sliding', ms: 15 * 60_000, limit: 10 }]
const PER_NAME: WindowRule[] = [{ name: 'visitor-password', kind: 'sliding', ms: 15 * 60_000, limit: 200 }]
const FORM_BODY_MAX = 8 * 1024

interface Rule {
  id: string
  passwordHash: string | null
  expiresAt: number | null
  secret: string
}

interface UserRules {
  rules: Map<string, Rule>
  freshUntil: number
}

const HTML_HEADERS = [
  'Content-Type',
  'text/html; charset=utf-8',
  'Cache-Control',
  'no-store',
  'X-Content-Type-Options',
  'nosniff',
  'Referrer-Policy',
  'no-referrer',
  // the form is the service's own markup on the user's origin: nothing else may run or frame it
  'Content-Security-Policy',
  "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
]
const TEXT_HEADERS = ['Content-Type', 'text/plain; charset=utf-8', 'Cache-Control', 'no-store', 'X-Content-Type-Options', 'nosniff']

/** The first path segment as the resolver reads it: decoded once, NFC; null when it cannot name anything. */
function decodeName(raw: string): string | null {
  if (raw === '') return null
  return decodeOnce(raw)?.normalize('NFC') ?? null
}

/** What visitor access says to a visitor, in each language (langOf). */
const WORDS: Record<
  Lang,
  {
    title: string
    intro: (name: string) => string
    label: string
    submit: string
    empty: string
    wrong: string
    gone: string
    tooMany: (seconds: number) => string
    tooLarge: string
  }
> = {
  en: {
    title: 'Password required',
    intro: (name) => `${name} is protected. Enter its password to continue.`,
    label: 'Password',
    submit: 'Continue',
    empty: 'Enter the password.',
    wrong: 'Wrong password.',
    gone: 'Gone: this page has expired',
    tooMany: (seconds) => `Too many wrong passwords; try again in ${seconds} seconds`,
    tooLarge: 'Payload Too Large',
  },
  zh: {
    title: '需要密码',
    intro: (name) => `${name} 受密码保护，请输入密码继续。`,
    label: '密码',
    submit: '继续',
    empty: '请输入密码。',
    wrong: '密码错误。',
    gone: '此页面已过期',
    tooMany: (seconds) => `密码错误次数过多，请 ${seconds} 秒后再试`,
    tooLarge: '请求体过大',
  },
}
type Words = (typeof WORDS)[Lang]

function passwordForm(lang: Lang, title: string, error: 'empty' | 'wrong' | null): string {
  const w = WORDS[lang]
  return `<!doctype html>
<html lang="${HTML_LANG[lang]}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>${w.title}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:22rem;margin:15vh auto;padding:0 1rem;color:#222}
input{font:inherit;width:100%;box-sizing:border-box;padding:.5rem;margin:.5rem 0}button{font:inherit;padding:.5rem 1rem}
.err{color:#b00020}</style></head>
<body><h1>${w.title}</h1><p>${w.intro(escapeHtml(title))}</p>
${error ? `<p class="err" role="alert">${w[error]}</p>` : ''}<form method="post">
<label for="password">${w.label}</label><input id="password" name="password" type="password" autocomplete="current-password" required autofocus>
<button type="submit">${w.submit}</button></form></body></html>
`
}

/**
 * Visitor access: a project or single page that needs a password, or that has expired (410).
 * Invariants:
 * - nothing about a protected name is answered before this check (the public host calls it
 *   first, on every form of URL); a wrong or missing password gets 401 and never content;
 * - the cookie holds an HMAC of the rule id and issue time under a per-rule secret that
 *   changes with the password, never the password; HttpOnly, SameSite=Lax, Secure over
 *   HTTPS, host-only; named by its rule and checked against that rule alone, so it opens
 *   that name only, and Path=/ so one unlock holds on every URL of the name on that origin
 *   (a page's clean URL, escapes, previews; decision 175);
 * - wrong passwords are limited per client and name and per name (429, Retry-After), in the
 *   shared limit store, so every instance counts them.
 */
export function createAccessGate(deps: Deps, store: DomainsStore) {
  const { config, limits, clock } = deps
  const cache = createInvalidatedCache<string, UserRules>({
    bus: deps.bus,
    channel: ACCESS_CHANNEL,
    maxEntries: 50_000,
    maxMisses: 50_000,
    isMiss: (u) => u.rules.size === 0,
    isFresh: (u) => u.freshUntil > performance.now(),
  })
  // passwords already checked (Basic sends one with every request): Argon2 once per minute
  const verified = new Map<string, number>()

  async function load(username: string): Promise<UserRules> {
    const ticket = cache.ticket()
    const rows = await store.accessOf(username)
    const rules = new Map<string, Rule>()
    for (const r of rows) {
      rules.set(r.name, { id: r.id, passwordHash: r.password_hash, expiresAt: r.expires_at === null ? null : Number(r.expires_at), secret: r.secret })
    }
    const u = { rules, freshUntil: performance.now() + 60_000 }
    cache.set(username, u, ticket)
    return u
  }

  const mac = (rule: Rule, issued: number) => crypto.createHmac('sha256', rule.secret).update(`${rule.id}.${issued}`).digest('base64url')
  const cookieName = (rule: Rule) => `svc_access_${rule.id.replace(/-/g, '')}`

  function cookieOk(req: IncomingMessage, rule: Rule): boolean {
    const header = req.headers.cookie
    if (!header) return false
    const want = `${cookieName(rule)}=`
    const nowS = Math.floor(clock.now() / 1000)
    for (const part of header.split(';')) {
      const c = part.trim()
      if (!c.startsWith(want)) continue
      const m = /^(\d{1,12})\.([A-Za-z0-9_-]{43})$/.exec(c.slice(want.length))
      if (!m) continue
      const issued = Number(m[1])
      if (issued > nowS + 60 || nowS - issued > COOKIE_MAX_AGE_S) continue
      const a = Buffer.from(m[2])
      const b = Buffer.from(mac(rule, issued))
      if (a.length === b.length && crypto.timingSafeEqual(a, b)) return true
    }
    return false
  }

  function setCookie(req: IncomingMessage, rule: Rule): string {
    const now = clock.now()
    const issued = Math.floor(now / 1000)
    const left = rule.expiresAt === null ? COOKIE_MAX_AGE_S : Math.max(1, Math.min(COOKIE_MAX_AGE_S, Math.floor((rule.expiresAt - now) / 1000)))
    const secure = isHttps(req, config) ? '; Secure' : ''
    return `${cookieName(rule)}=${issued}.${mac(rule, issued)}; Path=/; Max-Age=${left}; HttpOnly; SameSite=Lax${secure}`
  }

  // wrong passwords counted per client and name and per name; a try being verified counts
  // as wrong until it ends, on every instance (limits/in-flight.ts), so a burst gets no more
  const tries = createOutcomeLimits(limits, clock)

  /** Checks a password with the throttle: 'ok', 'wrong', or seconds to wait. */
  async function check(req: IncomingMessage, at: AccessPoint, name: string, rule: Rule, password: string): Promise<'ok' | 'wrong' | number> {
    const memo = `${rule.secret}:${crypto.createHash('sha256').update(password).digest('base64url')}`
    const until = verified.get(memo)
    if (until !== undefined && until > performance.now()) return 'ok'
    const { wait, attempt } = await tries.enter([
      [`visit:ip:${ipLimitKey(clientIp(req, config))}:${at.username}/${name}`, PER_CLIENT],
      [`visit:name:${at.username}/${name}`, PER_NAME],
    ])
    if (attempt === null) return wait
    try {
      const ok = rule.passwordHash !== null && Buffer.byteLength(password) <= MAX_PASSWORD_BYTES && (await verifyPassword(rule.passwordHash, password))
      if (!ok) {
        await attempt.count()
        return 'wrong'
      }
    } finally {
      attempt.leave()
    }
    if (verified.size >= 10_000) verified.clear()
    verified.set(memo, performance.now() + 60_000)
    return 'ok'
  }

  const basicPassword = (req: IncomingMessage): string | null => {
    const h = req.headers.authorization
    if (typeof h !== 'string' || !/^basic /i.test(h)) return null
    const decoded = Buffer.from(h.slice(6).trim(), 'base64').toString('utf8')
    const colon = decoded.indexOf(':')
    return colon < 0 ? null : decoded.slice(colon + 1)
  }

  /**
   * The form's password. A body over FORM_BODY_MAX (announced, or once that much has come) is
   * 'too-large' at once: the rest is never waited for, and the 413 closes the connection.
   */
  function readForm(req: IncomingMessage): Promise<{ password: string | null } | 'too-large'> {
    return new Promise((resolve) => {
      const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase()
      if (Number(req.headers['content-length'] ?? 0) > FORM_BODY_MAX) return resolve('too-large')
      const chunks: Buffer[] = []
      let n = 0
      const onData = (c: Buffer) => {
        n += c.length
        if (n <= FORM_BODY_MAX) return void chunks.push(c)
        req.off('data', onData)
        resolve('too-large')
      }
      req.on('data', onData)
      req.once('end', () => {
        if (n > FORM_BODY_MAX) return
        if (type !== 'application/x-www-form-urlencoded') return resolve({ password: null })
        resolve({ password: new URLSearchParams(Buffer.concat(chunks).toString('utf8')).get('password') })
      })
      req.once('error', () => resolve({ password: null }))
    })
  }

  /** An answer whose body is in the visitor's language (`say`: its words there), hence Vary. */
  const send = (req: IncomingMessage, res: ServerResponse, status: number, headers: string[], say: (w: Words, lang: Lang) => string) => {
    const lang = langOf(req)
    const buf = Buffer.from(say(WORDS[lang], lang))
    res.writeHead(status, [...headers, 'Vary', 'Accept-Language', 'Content-Length', String(buf.length)])
    res.end(req.method === 'HEAD' ? undefined : buf)
  }

  /** 401: the form on an origin where a cookie can be set and a browser navigates, else a Basic challenge. */
  function refuse(req: IncomingMessage, res: ServerResponse, at: AccessPoint, name: string, error: 'empty' | 'wrong' | null): void {
    const navigating = req.headers['sec-fetch-mode'] === 'navigate' || (req.headers.accept ?? '').includes('text/html')
    if (at.cookies && (navigating || req.method === 'POST')) {
      // a scheme browsers do not prompt for, so they show the form instead of a dialog
      send(req, res, 401, [...HTML_HEADERS, 'WWW-Authenticate', `Form realm="${at.username}/${name.replace(/["\\]/g, '')}"`], (_w, lang) =>
        passwordForm(lang, name, error),
      )
      return
    }
    const realm = `${at.username}/${name}`.replace(/["\\\r\n]/g, '')
    send(req, res, 401, [...TEXT_HEADERS, 'WWW-Authenticate', `Basic realm="${realm}", charset="UTF-8"`], (w) => `${w.title}\n`)
  }

  /**
   * Where the form sends a visitor back to: the request's own path and query on this origin,
   * the path's escapes uppercased as every Location's. Leading slashes and backslashes
   * collapse to one: browsers read `//evil.test/` and `/\evil.test/` as another host, and on a
   * project's own origin or a custom domain every path is gated, those included (else an open
   * redirect right after the password).
   */
  const backTo = (url: string | undefined): string => upperEscapes(`/${(url ?? '/').replace(/^[/\\]+/, '')}`)

  const throttled = (req: IncomingMessage, res: ServerResponse, wait: number) =>
    send(req, res, 429, [...TEXT_HEADERS, 'Retry-After', String(wait)], (w) => `${w.tooMany(wait)}\n`)

  async function decide(req: IncomingMessage, res: ServerResponse, at: AccessPoint, name: string, rule: Rule): Promise<Access> {
    if (rule.expiresAt !== null && rule.expiresAt <= clock.now()) {
      send(req, res, 410, TEXT_HEADERS, (w) => `${w.gone}\n`)
      return false
    }
    if (rule.passwordHash === null) return true
    if (at.cookies && cookieOk(req, rule)) return 'private'
    const basic = basicPassword(req)
    if (basic !== null) {
      const r = await check(req, at, name, rule, basic)
      if (r === 'ok') return 'private'
      if (typeof r === 'number') throttled(req, res, r)
      else refuse(req, res, at, name, null)
      return false
    }
    if (req.method === 'POST' && at.cookies) {
      const form = await readForm(req)
      if (form === 'too-large') {
        // the rest of the body is not read: the connection ends with the answer
        send(req, res, 413, [...TEXT_HEADERS, 'Connection', 'close'], (w) => `${w.tooLarge}\n`)
        return false
      }
      if (form.password === null || form.password === '') {
        refuse(req, res, at, name, 'empty')
        return false
      }
      const r = await check(req, at, name, rule, form.password)
      if (typeof r === 'number') throttled(req, res, r)
      else if (r === 'wrong') refuse(req, res, at, name, 'wrong')
      else {
        res.writeHead(303, ['Location', backTo(req.url), 'Set-Cookie', setCookie(req, rule), ...TEXT_HEADERS, 'Content-Length', '0'])
        res.end()
      }
      return false
    }
    refuse(req, res, at, name, null)
    return false
  }

  const ruleFor = (u: UserRules, raw: string): [string, Rule] | null => {
    if (u.rules.size === 0) return null
    const decoded = decodeName(raw)
    // a preview ({project}@{deploy}) is held by its project's rule
    const name = decoded === null ? null : projectOf(decoded)
    const rule = name === null ? undefined : u.rules.get(name)
    return rule === undefined ? null : [name as string, rule]
  }

  return {
    openNow(username: string, rawName: string): boolean {
      const u = cache.get(username)
      return u !== undefined && ruleFor(u, rawName) === null
    },

    access(req: IncomingMessage, res: ServerResponse, at: AccessPoint): Access | Promise<Access> {
      const u = cache.get(at.username)
      if (u !== undefined) {
        const hit = ruleFor(u, at.rawName)
        return hit === null ? true : decide(req, res, at, hit[0], hit[1])
      }
      return load(at.username).then((loaded) => {
        const hit = ruleFor(loaded, at.rawName)
        return hit === null ? true : decide(req, res, at, hit[0], hit[1])
      })
    },

    /** Drops a user's rules here and on every instance. */
    invalidate: (username: string) => cache.publish(username),
  }
}
export type AccessGate = ReturnType<typeof createAccessGate>

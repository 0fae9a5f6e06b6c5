import crypto from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Config } from '../config.js'
import type { Deps } from '../deps.js'
import { AppError } from '../errors/app-error.js'
import type { ErrorKey } from '../errors/codes.js'
import type { HitResult, LimitStore, WindowState } from '../limits/store.js'
import type { TierRules } from '../limits/tiers.js'
import { beijingTime } from '../util/time.js'
import { ipLimitKey } from './ip-key.js'
import { clientIp, isCrossSite, isHttps } from './origin.js'
import { fromBrowser, tokensEqual } from './csrf.js'
import type { Admission, AuthMode } from './types.js'

export type { Admission }

/**
 * How long a request's concurrency slot outlives its holder's last renewal: the store renews
 * the slot while the request runs (holdSlots in limits/store.ts), however long, so this only
 * frees the slots of an instance that died without giving them back (killed, with Redis).
 */
const SLOT_TTL_MS = 10 * 60_000
// concurrency slot ids: unique per process (random prefix, for Redis shared by instances) and per request
const TOKEN_PREFIX = `${crypto.randomBytes(6).toString('hex')}:`
let tokenSeq = 0
const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])
const CODE_BY_WINDOW: Record<string, ErrorKey> = { minute: 'RATE_LIMIT_MINUTE', hour: 'RATE_LIMIT_HOUR', day: 'RATE_LIMIT_DAY' }

/** The window whose headers a response carries: lowest remaining, shortest window on ties. */
function bindingWindow(r: HitResult): WindowState {
  let best = r.windows[0]
  for (const w of r.windows) if (w.rule.limit - w.count < best.rule.limit - best.count) best = w
  return best
}

/** X-RateLimit-* of a window, as a raw header list (name, value, ...). */
export function rateHeaderList(w: WindowState): string[] {
  return [
    'X-RateLimit-Limit',
    String(w.rule.limit),
    'X-RateLimit-Remaining',
    String(Math.max(0, w.rule.limit - w.count)),
    'X-RateLimit-Reset',
    String(Math.ceil(w.resetAt / 1000)),
    'X-RateLimit-Window',
    w.rule.name,
  ]
}

function setRateHeaders(reply: FastifyReply, w: WindowState): void {
  const h = rateHeaderList(w)
  for (let i = 0; i < h.length; i += 2) reply.header(h[i], h[i + 1])
}

function rateError(key: ErrorKey, w: { limit: number; count: number; resetAt: number }, now: number, scope?: string): AppError {
  const retryAfter = Math.max(1, Math.ceil((w.resetAt - now) / 1000))
  // reset_time names the same second as X-RateLimit-Reset (rounded up to a whole second)
  const details: Record<string, unknown> = { current: w.count, limit: w.limit, reset_time: beijingTime(Math.ceil(w.resetAt / 1000) * 1000) }
  if (scope !== undefined) details.scope = scope
  return new AppError(key, {
    params: { limit: w.limit, retry_after: retryAfter },
    extra: { retry_after: retryAfter, details },
    headers: { 'Retry-After': String(retryAfter) },
  })
}

/**
 * The 429 of a window check that refused (1204 minute, 1203 hour, 1205 day): the full window
 * that frees up last, so a retry after `Retry-After` is not refused again by another one.
 * `scope` names what the windows count when they are not the API's own (details.scope).
 */
export function windowRefusal(hit: HitResult, scope?: string): { window: WindowState; error: AppError } {
  const exceeded = hit.windows.filter((w) => w.count >= w.rule.limit)
  const worst = exceeded.reduce((a, b) => (b.resetAt > a.resetAt ? b : a))
  const key = CODE_BY_WINDOW[worst.rule.name] ?? 'RATE_LIMIT_MINUTE'
  return { window: worst, error: rateError(key, { limit: worst.rule.limit, count: worst.count, resetAt: worst.resetAt }, hit.now, scope) }
}

/** The refusal of a request that found every concurrency slot taken. */
function concurrencyRefusal(peek: HitResult, current: number, rules: TierRules, now: number): Admission {
  return {
    ok: false,
    window: bindingWindow(peek),
    error: new AppError('RATE_LIMIT_CONCURRENT', {
      params: { limit: rules.concurrent, retry_after: 1 },
      extra: { retry_after: 1, details: { current, limit: rules.concurrent, reset_time: beijingTime(now + 1000) } },
      headers: { 'Retry-After': '1' },
    }),
  }
}

/** The answer to a window check that counted the request (or refused it). */
function windowsOutcome(hit: HitResult): Admission {
  if (hit.allowed) return { ok: true, window: bindingWindow(hit) }
  return { ok: false, ...windowRefusal(hit) }
}

/**
 * Holds a taken slot until the response closes (finished, failed or aborted); returns the
 * release, which is idempotent.
 */
function holdSlot(release: () => void, res: ServerResponse): () => void {
  let released = false
  const once = () => {
    if (!released) {
      released = true
      release()
    }
  }
  res.once('close', once)
  // a client that went away while the slot was being taken has already closed the response:
  // its 'close' will not come again (the slot would stay taken, renewed while this process runs)
  if (res.closed) once()
  return once
}

/**
 * Counts one API request against the identity's limits: a concurrency slot (held until the
 * response closes), then the minute, hour and day windows; a refused request gives its slot
 * back at once. Shared by the guard and by fast paths that answer before routing (the KV
 * public read). With a store that counts in this process (`limits.sync`) it answers at once,
 * without promises; otherwise (Redis) it returns a promise. Throws (or rejects) when the
 * store is unavailable (1504), with the slot already given back.
 */
export function admit(limits: LimitStore, identity: string, rules: TierRules, now: number, res: ServerResponse): Admission | Promise<Admission> {
  const token = `${TOKEN_PREFIX}${++tokenSeq}`
  const s = limits.sync
  if (s === undefined) return admitAsync(limits, identity, token, rules, now, res)
  const slot = s.acquire(identity, rules.concurrent, token, now, SLOT_TTL_MS)
  if (!slot.ok) return concurrencyRefusal(s.hit(identity, rules.windows, now, false), slot.current, rules, now)
  const release = holdSlot(() => s.release(identity, token), res)
  let a: Admission
  try {
    a = windowsOutcome(s.hit(identity, rules.windows, now, true))
  } catch (e) {
    release()
    throw e
  }
  if (!a.ok) release()
  return a
}

/** The slot token of answers written while they are admitted (see admitNow): never held past it. */
const NOW_TOKEN = `${TOKEN_PREFIX}now`

/**
 * `admit` for a request whose answer is written before control returns to the event loop (a
 * fast path answering from memory). With a store that counts in this process, the slot is
 * taken and given back within this call: no other request can run in between, so holding it
 * until the response closes would change nothing but the cost (a token, a listener and a
 * closure per request). A caller whose slots are all taken by requests still running is
 * refused exactly as by `admit`. With Redis (shared by instances), this is `admit`.
 */
export function admitNow(limits: LimitStore, identity: string, rules: TierRules, now: number, res: ServerResponse): Admission | Promise<Admission> {
  const s = limits.sync
  if (s === undefined) return admit(limits, identity, rules, now, res)
  const slot = s.acquire(identity, rules.concurrent, NOW_TOKEN, now, SLOT_TTL_MS)
  if (!slot.ok) return concurrencyRefusal(s.hit(identity, rules.windows, now, false), slot.current, rules, now)
  try {
    return windowsOutcome(s.hit(identity, rules.windows, now, true))
  } finally {
    s.release(identity, NOW_TOKEN)
  }
}

async function admitAsync(limits: LimitStore, identity: string, token: string, rules: TierRules, now: number, res: ServerResponse): Promise<Admission> {
  const slot = await limits.acquire(identity, rules.concurrent, token, now, SLOT_TTL_MS)
  if (!slot.ok) return concurrencyRefusal(await limits.hit(identity, rules.windows, now, false), slot.current, rules, now)
  const release = holdSlot(() => void limits.release(identity, token), res)
  let a: Admission
  try {
    a = windowsOutcome(await limits.hit(identity, rules.windows, now, true))
  } catch (e) {
    release()
    throw e
  }
  if (!a.ok) release()
  return a
}

/**
 * The limit identity of an anonymous API request: its client address (an IPv6 client: its /64).
 * The guard and the fast paths that admit before routing count by this one key.
 */
export const anonymousIdentity = (req: FastifyRequest | IncomingMessage, config: Pick<Config, 'trustProxy'>): string =>
  `ip:${ipLimitKey(clientIp(req, config))}`

/**
 * The API guard, applied to every /svc_api and /api route (and their 404s), in this order:
 * resolve the caller; HTTPS rule (1116, before any auth error); concurrency and window limits
 * per API key, account or client IP, with X-RateLimit-* headers on every answer (CORS
 * preflights excepted: neither counted nor refused, nor by the HTTPS rule); then the
 * route's authentication, cross-site and CSRF-token rules (cookie writes), and entitlement.
 */
export function installApiGuard(app: FastifyInstance, deps: Deps): void {
  const { config, limits, clock, tiers } = deps
  app.decorateRequest('principal', null)

  app.addHook('onRequest', async (req, reply) => {
    const cfg = req.routeOptions.config ?? {}
    const mode: AuthMode = cfg.auth ?? 'none'
    const res = await deps.resolvePrincipal(
      req.headers.authorization,
      typeof req.headers.cookie === 'string' ? req.headers.cookie : undefined,
      req.headers['sec-fetch-site'] !== undefined,
    )
    const principal = res.kind === 'ok' ? res.principal : null
    const identity = principal ? (principal.via === 'key' ? `k:${principal.keyId}` : `u:${principal.user.id}`) : anonymousIdentity(req, config)
    const rules = tiers[principal?.user.tier ?? 'default']
    const now = clock.now()

    // A CORS preflight is the browser asking, not the page: it is never counted nor refused
    // (no credentials, no body), so the page reads the answer to its real request, a 429 or
    // a 1116 (a refused preflight is only a network error to it), and every fetch with a
    // custom header does not cost two.
    const preflight = req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined
    // a form post to a site page (handed over by the public host) follows the site's own
    // scheme rule, already applied there: loopback sites are plain HTTP
    if (!isHttps(req, config) && !preflight && req.raw.handedOver?.siteForm === undefined) {
      if (cfg.rateLimit !== false) setRateHeaders(reply, bindingWindow(await limits.hit(identity, rules.windows, now, false)))
      throw new AppError('HTTPS_REQUIRED')
    }

    // a route that counts a keyed request itself (admitInHandler) gets the headers of the windows as they are
    const inHandler = cfg.rateLimit === 'handler' && principal?.via === 'key'
    if (inHandler && !preflight) setRateHeaders(reply, bindingWindow(await limits.hit(identity, rules.windows, now, false)))
    else if (cfg.rateLimit !== false && !preflight) {
      // a fast path that handed the request over may have admitted it already (FastPath)
      const pre = req.raw.handedOver?.admission
      if (pre !== undefined && 'failed' in pre) throw pre.failed
      const a = pre ?? (await admit(limits, identity, rules, now, reply.raw))
      setRateHeaders(reply, a.window)
      if (!a.ok) throw a.error
    }

    if (mode === 'none') {
      req.principal = principal
      return
    }
    if (res.kind === 'error') throw new AppError(res.error)
    if (!principal) throw new AppError(mode === 'session' ? 'SIGN_IN_REQUIRED' : 'AUTH_MISSING')
    if (mode === 'session' && principal.via !== 'session') throw new AppError('SESSION_REQUIRED')
    // a read-only key reads: every write route refuses it, whatever the feature (1440)
    if (principal.readOnly && UNSAFE.has(req.method) && !cfg.readOnlySafe) throw new AppError('READ_ONLY_KEY')
    if (principal.via === 'session' && UNSAFE.has(req.method) && isCrossSite(req, config)) throw new AppError('CROSS_ORIGIN')
    // a browser's cookie write must also carry the session's CSRF token (X-CSRF-Token);
    // clients that send neither Sec-Fetch-Site nor Origin (curl, scripts) are not asked for it
    if (principal.via === 'session' && UNSAFE.has(req.method) && fromBrowser(req) && !tokensEqual(req.headers['x-csrf-token'], principal.csrfToken))
      throw new AppError('CSRF_TOKEN')
    if (cfg.entitlement) {
      const ent = await deps.db.k
        .selectFrom('entitlements')
        .select('feature')
        .where('user_id', '=', principal.user.id)
        .where('feature', '=', cfg.entitlement)
        .executeTakeFirst()
      if (!ent) throw new AppError('ENTITLEMENT_REQUIRED')
    }
    req.principal = principal
  })

  // NUL can never be stored or matched (PostgreSQL refuses it in text): one clear 400 for every route
  // (a decoded NUL can only come from %00 in the URL: the HTTP parser refuses raw NUL bytes)
  app.addHook('preValidation', (req, _reply, done) => {
    if (req.url.includes('%00') && (hasNul(req.params) || hasNul(req.query))) {
      done(
        new AppError('INVALID_PARAMETER', {
          params: { detail: { zh: '路径和查询参数中不能有 NUL 字符', en: 'NUL characters are not allowed in paths or query strings' } },
        }),
      )
      return
    }
    done()
  })
}

function hasNul(v: unknown): boolean {
  if (typeof v === 'string') return v.includes('\u0000')
  if (Array.isArray(v)) return v.some(hasNul)
  if (v && typeof v === 'object') return Object.values(v).some(hasNul)
  return false
}

/**
 * Counts a request of a route with `rateLimit: 'handler'` (whose API key the guard skipped)
 * against the key's limits, as the guard counts any other: a concurrency slot held until the
 * response closes, then the windows; the X-RateLimit-* headers set. A refusal is returned (its
 * 429 error with Retry-After), not thrown, for the handler to answer in its own format.
 */
export async function admitInHandler(req: FastifyRequest, reply: FastifyReply, deps: Pick<Deps, 'limits' | 'clock' | 'tiers'>): Promise<Admission> {
  const p = caller(req)
  const identity = p.via === 'key' ? `k:${p.keyId}` : `u:${p.user.id}`
  const a = await admit(deps.limits, identity, deps.tiers[p.user.tier ?? 'default'], deps.clock.now(), reply.raw)
  setRateHeaders(reply, a.window)
  return a
}

/** The authenticated caller of a route with auth 'any' or 'session' (set by the guard). */
export function caller(req: FastifyRequest) {
  if (!req.principal) throw new AppError('AUTH_MISSING')
  return req.principal
}

import type { IncomingMessage, ServerResponse } from 'node:http'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { escapeHtml } from '../../util/html.js'
import type { Deps } from '../../deps.js'
import { isAppError } from '../../errors/app-error.js'
import { HTML_LANG, langOf, type Lang } from '../../errors/render.js'
import { INERT_CONTENT_CSP } from '../../http/content-headers.js'
import { isHttps, serviceOrigin } from '../../http/origin.js'
import { createAdmin } from '../admin/service.js'
import { createAbuse, REPORT_PATH, siteKeyOfPath } from './service.js'

export const SECURITY_TXT_PATH = '/.well-known/security.txt'

/** The notice's words; the report link's label is the report page's title. */
const NOTICE: Record<Lang, { title: string; heading: string; removed: string; held: string; report: string; contact: string }> = {
  en: {
    title: '451 Unavailable For Legal Reasons',
    heading: 'Unavailable for legal reasons',
    removed: 'This content was removed after an abuse report.',
    held: 'This content is held for review after an abuse report.',
    report: 'Report content',
    contact: 'Contact',
  },
  zh: {
    title: '451 因法律原因不可用',
    heading: '因法律原因不可用',
    removed: '该内容已因滥用举报被移除。',
    held: '该内容因滥用举报正在接受审核。',
    report: '举报内容',
    contact: '联系我们',
  },
}

/**
 * The 451 notice of held content: the same on every public route, inert (no script, no
 * style), in the visitor's language (langOf; hence Vary). Its report link names the page (a
 * sandboxed notice sends no usable Referer).
 */
export function noticeOf(state: string, pageUrl: string, lang: Lang): { headers: string[]; body: Buffer } {
  const w = NOTICE[lang]
  const report = `${REPORT_PATH}?url=${encodeURIComponent(pageUrl)}`
  const body = Buffer.from(
    `<!doctype html><html lang="${HTML_LANG[lang]}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${w.title}</title></head><body>` +
      `<h1>${w.heading}</h1><p>${state === 'removed' ? w.removed : w.held}</p>` +
      `<p><a href="${escapeHtml(report)}">${w.report}</a> · <a href="${SECURITY_TXT_PATH}">${w.contact}</a></p></body></html>`,
  )
  return {
    headers: [
      'Content-Type',
      'text/html; charset=utf-8',
      'Content-Length',
      String(body.length),
      'Cache-Control',
      'no-store',
      'Vary',
      'Accept-Language',
      'Content-Security-Policy',
      INERT_CONTENT_CSP,
      'X-Content-Type-Options',
      'nosniff',
      'Cross-Origin-Resource-Policy',
      'cross-origin',
      'Access-Control-Allow-Origin',
      '*',
      'Link',
      `<${REPORT_PATH}>; rel="blocked-by"`,
    ],
    body,
  }
}

/**
 * The public host's one hook into abuse handling (features/sites/serve.ts): whether a path is
 * held, the 451 answer, and the two well-known paths every user's origin answers too.
 */
export interface HostHolds {
  /** The hold state of a path-form path (/{username}/{name}/...): null none; undefined not loaded yet. */
  stateOf(path: string): string | null | undefined
  /** Loads the holds and answers the path's state from them: also when the index cannot keep them (bus down). */
  load(path: string): Promise<string | null>
  /** The hold key of a path-form path, for a reader that asks the database itself (null: names none). */
  keyOf(path: string): string | null
  /** The 451 answer in the request's language; `path`: the request's own path, which the report link names on the request's host. */
  notice(state: string, req: IncomingMessage, path: string): { headers: string[]; body: Buffer }
  /** Answers REPORT_PATH and security.txt on a user's origin; false for any other path. */
  wellKnown(req: IncomingMessage, res: ServerResponse, path: string): boolean
  /**
   * Whether a site's own file at this path answers on its project's origin or custom domain,
   * before wellKnown (security.txt: the site's contacts); REPORT_PATH is always the service's.
   */
  yields(path: string): boolean
}

export function hostHolds(deps: Deps, serviceUrl: (req: IncomingMessage) => string | null): HostHolds {
  const abuse = deps.services.get(createAbuse)
  const stateIn = (m: ReadonlyMap<string, string>, path: string): string | null => {
    if (m.size === 0) return null
    const key = siteKeyOfPath(path)
    return key === null ? null : (m.get(key) ?? null)
  }
  return {
    stateOf(path) {
      const m = abuse.holdsNow()
      return m === undefined ? undefined : stateIn(m, path)
    },
    load: async (path) => stateIn(await abuse.holds(), path),
    keyOf: siteKeyOfPath,
    notice: (state, req, path) => noticeOf(state, `${isHttps(req, deps.config) ? 'https' : 'http'}://${req.headers.host ?? ''}${path}`, langOf(req)),
    yields: (path) => path === SECURITY_TXT_PATH,
    wellKnown(req, res, path) {
      if (path !== REPORT_PATH && path !== SECURITY_TXT_PATH) return false
      const base = serviceUrl(req)
      if (base === null) {
        res.writeHead(404, ['Content-Type', 'text/plain; charset=utf-8']).end('Not Found')
        return true
      }
      const page = `${isHttps(req, deps.config) ? 'https' : 'http'}://${req.headers.host ?? ''}/`
      const named = new URL(req.url ?? '/', 'http://x').searchParams.get('url')
      const to =
        path === REPORT_PATH
          ? `${base}/report?url=${encodeURIComponent((named ?? refererOn(req, page) ?? page).slice(0, 2000))}`
          : `${base}${SECURITY_TXT_PATH}`
      res.writeHead(302, ['Location', to, 'Cache-Control', 'no-store', 'Content-Length', '0']).end()
      return true
    },
  }
}

/** The Referer when it is a page of the same origin (the page a visitor wants to report). */
function refererOn(req: IncomingMessage, origin: string): string | null {
  const r = req.headers.referer
  if (typeof r !== 'string') return null
  try {
    const u = new URL(r)
    return new URL(origin).host === u.host ? u.href : null
  } catch {
    return null
  }
}

/** 451 for a held image or data link (null: not held); loads the holds when needed. */
export async function heldLink(deps: Deps, req: FastifyRequest, kind: 'image' | 'data', token: string): Promise<{ headers: string[]; body: Buffer } | null> {
  const abuse = deps.services.get(createAbuse)
  const m = abuse.holdsNow() ?? (await abuse.holds())
  if (m.size === 0) return null
  const state = m.get(`${kind}:${token}`)
  return state === undefined ? null : noticeOf(state, `${serviceOrigin(req, deps.config)}${req.url.split('?')[0]}`, langOf(req))
}

/**
 * Whether bytes were taken down (their digest is on the blocklist), asked of the blob store's
 * `admit`, the one check of blocked digests (decisions 35, 79). Image and data links ask it
 * before caching what a link serves: a copy of taken-down bytes under another token, or a
 * version of another file, is never served. Other failures (the database down) are thrown.
 */
export async function takenDown(deps: Deps, digest: string): Promise<boolean> {
  try {
    await deps.blobs.admit?.([digest])
    return false
  } catch (e) {
    if (isAppError(e) && e.key === 'CONTENT_BLOCKED') return true
    throw e
  }
}

/** The 451 notice of removed content, for a public link whose bytes were taken down. */
export function removedNotice(deps: Deps, req: FastifyRequest): { headers: string[]; body: Buffer } {
  return noticeOf('removed', `${serviceOrigin(req, deps.config)}${req.url.split('?')[0]}`, langOf(req))
}

/** For hot paths: whether a public link is held (451), or undefined when the holds are not loaded yet. */
export function linkHeldNow(deps: Deps, kind: 'image' | 'data', token: string): boolean | undefined {
  const m = deps.services.get(createAbuse).holdsNow()
  return m === undefined ? undefined : m.size > 0 && m.has(`${kind}:${token}`)
}

/** Sends a 451 notice through Fastify. */
export function sendNotice(reply: FastifyReply, n: { headers: string[]; body: Buffer }, head: boolean) {
  reply.code(451)
  for (let i = 0; i < n.headers.length; i += 2) reply.header(n.headers[i], n.headers[i + 1])
  return reply.send(head ? undefined : n.body)
}

/** security.txt (RFC 9116): contacts from the settings; expires a year ahead, regenerated on every request. */
export function securityTxt(settings: Record<string, string>, origin: string, now: number): string {
  const contacts = [settings.security_contact, settings.abuse_contact].filter((c, i, a) => c && a.indexOf(c) === i)
  const lines = contacts.length > 0 ? contacts.map((c) => `Contact: ${c}`) : [`Contact: ${origin}/report`]
  lines.push(`Expires: ${new Date(now + 365 * 86400_000).toISOString().replace(/\.\d{3}Z$/, 'Z')}`)
  lines.push(`Canonical: ${origin}${SECURITY_TXT_PATH}`)
  lines.push('Preferred-Languages: en, zh')
  lines.push(`# Report abusive content (phishing, malware, spam, copyright) without an account: ${origin}/report`)
  return `${lines.join('\n')}\n`
}

/** The public context of abuse handling: the well-known paths on the service's own host. */
export function abusePublic(app: FastifyInstance, deps: Deps): void {
  const admin = deps.services.get(createAdmin)
  app.get(SECURITY_TXT_PATH, { schema: { hide: true } }, async (req, reply) => {
    const origin = serviceOrigin(req, deps.config)
    reply.header('Cache-Control', 'public, max-age=3600').header('Access-Control-Allow-Origin', '*')
    return reply.type('text/plain; charset=utf-8').send(securityTxt(await admin.settings(), origin, deps.clock.now()))
  })
  app.get(REPORT_PATH, { schema: { hide: true } }, async (req, reply) => {
    const q = (req.query as Record<string, unknown>).url
    const ref = typeof req.headers.referer === 'string' ? req.headers.referer : undefined
    const url = typeof q === 'string' ? q : ref
    reply.header('Cache-Control', 'no-store')
    return reply.redirect(url ? `/report?url=${encodeURIComponent(url.slice(0, 2000))}` : '/report', 302)
  })
}

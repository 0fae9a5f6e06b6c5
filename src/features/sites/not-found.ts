import type { IncomingMessage, ServerResponse } from 'node:http'
import { HTML_LANG, langOf, type Lang } from '../../errors/render.js'
import { PAGE_CONTENT_HEADERS } from '../../http/content-headers.js'
import { prepare, sendPrepared, type Prepared } from '../../http/prepared-response.js'
import { systemClock, type Clock } from '../../util/clock.js'
import { escapeHtml } from '../../util/html.js'
import { dropOldest } from '../../util/oldest.js'

/**
 * The public host's own 404 page, for a missing path of a site without a `404.html` (decision
 * 193): a small HTML page in the visitor's language (langOf, as the service's other answers)
 * with a link to the root of the project they were in. Self-contained (no script, nothing to
 * load, not even a favicon), with the headers every answer of the host has (the sandbox CSP,
 * nosniff...), so it needs no policy of its own on any origin. Its frame (shortPage) also
 * makes the page naming where a path-form rule would send a visitor (sendLeaving).
 */

const WORDS: Record<Lang, { title: string; text: string; link: string }> = {
  en: {
    title: '404 - page not found',
    text: 'There is no page at this address. It may have moved, or the address may be mistyped.',
    link: "Go to the site's home page",
  },
  zh: {
    title: '404 - 页面不存在',
    text: '这个地址没有页面：它可能已经移走，或者地址有误。',
    link: '前往网站首页',
  },
}

/** The page's answer in one language: prepared once, then sent as it is. */
interface Answer {
  p: Prepared
  body: Buffer
}
type Answers = Record<Lang, Answer | null>

function build(root: string | null, lang: Lang): Answer {
  const w = WORDS[lang]
  const link = root === null ? '' : `<p><a href="${escapeHtml(root)}">${w.link}</a></p>`
  return shortPage(404, lang, w.title, `<p>${w.text}</p>${link}`)
}

/** One of the host's own short pages: `title` as its heading, then `html` (escaped by the caller). */
function shortPage(status: number, lang: Lang, title: string, html: string): Answer {
  const body = Buffer.from(
    `<!doctype html>\n<html lang="${HTML_LANG[lang]}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
      // an icon of its own, empty: a browser asks the site for /favicon.ico otherwise, a second 404
      `<meta name="robots" content="noindex"><link rel="icon" href="data:,"><title>${title}</title>\n` +
      `<style>:root{color-scheme:light dark}body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:15vh auto;padding:0 1rem}h1{font-size:1.5rem}a{overflow-wrap:anywhere}</style></head>\n` +
      `<body><h1>${title}</h1>${html}</body></html>\n`,
  )
  // the plain 404's headers (plainHeaders: no-cache, the sandbox and CORS), as HTML that
  // depends on Accept-Language
  const p = prepare(status, [
    'Content-Type',
    'text/html; charset=utf-8',
    'Content-Length',
    String(body.length),
    'Cache-Control',
    'no-cache',
    'Vary',
    'Accept-Language',
    ...PAGE_CONTENT_HEADERS,
  ])
  return { p, body }
}

/** The page without a link: no site, or a miss at the site's root itself. */
const NO_LINK: Answers = { en: null, zh: null }
/**
 * Pages with a link, by root: a project's (`/{user}/{project}/`, `/{project}/` on a user's
 * origin, `/` on a project's origin or domain). Bounded: one whose entry was dropped is built
 * again on its next 404, as it was the first time.
 */
const WITH_LINK = new Map<string, Answers>()
const WITH_LINK_MAX = 1000

function answersOf(root: string | null): Answers {
  if (root === null) return NO_LINK
  let answers = WITH_LINK.get(root)
  if (answers === undefined) {
    if (WITH_LINK.size >= WITH_LINK_MAX) dropOldest(WITH_LINK)
    WITH_LINK.set(root, (answers = { en: null, zh: null }))
  }
  return answers
}

/**
 * Sends the 404 page with a link to `root` (null: none): prepared once per root and language;
 * HEAD gets the same head and no body (sendPrepared).
 */
export function sendNotFound(req: IncomingMessage, res: ServerResponse, root: string | null, clock: Clock = systemClock): void {
  const answers = answersOf(root)
  const lang = langOf(req)
  const a = answers[lang] ?? (answers[lang] = build(root, lang))
  sendPrepared(req, res, a.p, a.body, undefined, clock)
}

const LEAVING: Record<Lang, { title: string; text: string }> = {
  en: { title: 'This link leads to another site', text: 'The page at this address sends visitors to:' },
  zh: { title: '此链接指向另一个网站', text: '这个地址的页面把访客转到：' },
}

/**
 * The answer to a site rule's redirect to another site on the path form when the server has
 * no user origins to send the client to (CONTENT_DOMAIN=off): the service's origin never
 * redirects there itself (decision 298), so a 200 page names the target as a link
 * a visitor follows knowingly. Built per request (the target is the request's).
 */
export function sendLeaving(req: IncomingMessage, res: ServerResponse, target: string, clock: Clock = systemClock): void {
  const lang = langOf(req)
  const w = LEAVING[lang]
  const href = escapeHtml(target)
  const a = shortPage(200, lang, w.title, `<p>${w.text}</p><p><a href="${href}" rel="noreferrer">${href}</a></p>`)
  sendPrepared(req, res, a.p, a.body, undefined, clock)
}

const MAP: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

/**
 * Escapes text for HTML element content and quoted attribute values: & < > " ' (the one
 * implementation; the page templates of web/html.ts use it too). Not for unquoted
 * attributes, URLs or script content.
 */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => MAP[c])
}

// The tag patterns below read a tag's attributes up to its `>` and then take an optional `>`
// (`(>)?`, or `|$`): a tag with no `>` after it consumes the rest of the page in one match, which
// the callers drop (such a tag never closes). A pattern that required the `>` would rescan to
// the end from every later `<form`, `<input`, `<!--`: quadratic work on a crafted page of a
// few hundred KiB, minutes of the event loop (decision NEW-SECREVIEW-1).

// a tag that loads a file the page shows or runs as it opens, and its attributes (not <a> or
// <form>: a link loads nothing until it is followed, and `<a href="/">` is common on sites
// built for a subpath)
const LOADING_TAG = /<(script|link|img|source|iframe|embed|video|audio|track)\b([^>]*)(>)?/gi
// a <link> rel value's token that loads part of the page (stylesheet, preload), not one that
// only points somewhere (canonical, alternate) or that the page works without (icon, manifest)
const LOADING_REL = /\b(?:stylesheet|preload|modulepreload)\b/i
// a src= or href= and its value (quoted or not)
const SRC_OR_HREF = /(?:^|\s)(?:src|href)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>'"]+))/i
// a <base> tag's attributes: the first with an href gives the document's base URL
const BASE_TAG = /<base\b([^>]*)/gi
/** How many root-absolute files rootResources names at most (a page's first few suffice). */
const MAX_RESOURCES = 8
// what a URL resolves against, to tell a path on the page's own origin from another origin's
const ORIGIN = 'http://origin.invalid'

// an attribute's value in a tag's attribute text (quoted or not): attr(text, 'id')
const attr = (text: string, name: string): string | null => {
  const m = new RegExp(`(?:^|\\s)${name}\\s*=\\s*(?:"([^"]*)"|'([^']*)'|([^\\s>'"]+))`, 'i').exec(text)
  return m === null ? null : (m[1] ?? m[2] ?? m[3]).trim()
}

/** A value starting with one '/' (not '//', a scheme-relative URL). */
const rootAbsolute = (v: string): boolean => v.startsWith('/') && !v.startsWith('//')

/**
 * The root-absolute paths (`/assets/app.js`, without query or fragment) of the files a page
 * loads as it opens, as a build for `/` writes them: root-absolute URLs (Vite's default base),
 * or relative ones under a root-absolute `<base href="/">` (Angular's and Flutter's default
 * builds), which the browser resolves from the root the same way. Such a site works only at
 * the root of an origin. Reads the first MiB; at most MAX_RESOURCES paths, in order.
 */
export function rootResources(html: string): string[] {
  const head = html.slice(0, 1 << 20)
  let baseHref: string | null = null
  for (const b of head.matchAll(BASE_TAG)) if ((baseHref = attr(b[1], 'href')) !== null) break
  // a root-absolute base makes every relative URL root-absolute; any other leaves them relative
  const base = baseHref !== null && rootAbsolute(baseHref) ? ORIGIN + baseHref : null
  const out: string[] = []
  for (const m of head.matchAll(LOADING_TAG)) {
    if (m[3] === undefined) break
    if (m[1].toLowerCase() === 'link' && !LOADING_REL.test(attr(m[2], 'rel') ?? '')) continue
    const a = SRC_OR_HREF.exec(m[2])
    if (a === null) continue
    const value = (a[1] ?? a[2] ?? a[3]).trim()
    let url: string | null = null
    if (rootAbsolute(value)) url = value.replace(/[?#].*$/s, '')
    else if (base !== null && value !== '' && !value.startsWith('#')) {
      const u = URL.canParse(value, base) ? new URL(value, base) : null
      // an absolute or scheme-relative URL names another origin (or data:, blob:): not the root
      if (u !== null && u.origin === ORIGIN) url = u.pathname
    }
    if (url === null || url === '/' || out.includes(url)) continue
    out.push(url)
    if (out.length >= MAX_RESOURCES) break
  }
  return out
}

/**
 * The pages of a site that tell whether it is built for /, in order: its index, and the
 * 404 page a host sends for every missing path (SvelteKit's `fallback`, which loads its
 * files from / while the prerendered pages load theirs by relative paths; decision 186).
 */
export const ROOT_CHECK_PAGES = ['index.html', '404.html'] as const

/**
 * Whether a page of a site (one of ROOT_CHECK_PAGES) is built for the root of an origin: it
 * loads at least one file by a root-absolute path that the site itself has (`has`, given the
 * raw path). A page that only loads the user's shared files from `/` (another project's
 * `/common/theme.css`) is not.
 */
export async function builtForRoot(indexHtml: string, has: (path: string) => boolean | Promise<boolean>): Promise<boolean> {
  for (const p of rootResources(indexHtml)) if (await has(p)) return true
  return false
}

/** A URL path percent-decoded, or null when its escapes are malformed. */
export function decodedPath(p: string): string | null {
  try {
    return decodeURIComponent(p)
  } catch {
    return null
  }
}

// a form's attributes and its body (to its end, the next form or the page's end); no body
// when the tag has no `>`
const FORM_TAG = /<form\b([^>]*)(?:>([\s\S]*?)(?:<\/form\s*>|(?=<form\b)|$)|$)/gi
const INPUT_TAG = /<input\b([^>]*)(>)?/gi
// a button's or input's attributes, and the formenctype that makes it send its form as multipart
const BUTTON_TAG = /<(?:button|input)\b([^>]*)/gi
const MULTIPART_ENCTYPE = /\bformenctype\s*=\s*(?:["']\s*)?multipart\/form-data/i
// what a browser never shows as forms: comments, and raw text or inert elements; one left open
// runs to the page's end, as in a browser
const QUIET = /<!--[\s\S]*?(?:-->|$)|<(script|template|textarea|style)\b[^>]*(?:>[\s\S]*?(?:<\/\1\s*>|$)|$)/gi

/** The closed `<input>` tags of a form's body, their attribute texts. */
const inputsOf = (body: string): string[] => [...body.matchAll(INPUT_TAG)].filter((i) => i[2] !== undefined).map((i) => i[1])
/** Whether a form's body has a button or input that sends it as multipart itself (formenctype). */
const multipartButton = (body: string): boolean => [...body.matchAll(BUTTON_TAG)].some((b) => MULTIPART_ENCTYPE.test(b[1]))

/** A form whose file input a browser sends as the file's name alone (fileInputsSentAsNames). */
export interface FileAsName {
  /** How the page names the form: `id="contact"`, `name="apply"`, `action="..."`, or `form 2` (its place). */
  form: string
  /** The file input's name (`name="cv"`), or `a file input` when it has none. */
  input: string
  /** Whether the form is sent by GET (a query string carries names only, whatever its enctype). */
  get: boolean
}

/**
 * The forms of a page with an `<input type="file">` that a browser submits without the file:
 * a form without `enctype="multipart/form-data"` (or sent by GET) posts only the file's name,
 * as a text field. Comments, scripts and templates are skipped. Reads the first MiB.
 */
export function fileInputsSentAsNames(html: string): FileAsName[] {
  const page = html.slice(0, 1 << 20).replace(QUIET, ' ')
  const out: FileAsName[] = []
  let place = 0
  for (const m of page.matchAll(FORM_TAG)) {
    const [, tag, body] = m
    if (body === undefined) break
    place++
    const file = inputsOf(body).find((i) => attr(i, 'type')?.toLowerCase() === 'file')
    if (file === undefined) continue
    const get = (attr(tag, 'method') ?? 'get').toLowerCase() !== 'post'
    const multipart = (attr(tag, 'enctype') ?? '').toLowerCase() === 'multipart/form-data' || multipartButton(body)
    if (!get && multipart) continue
    const action = attr(tag, 'action') ?? ''
    const named = (['id', 'name'] as const).map((a) => [a, attr(tag, a)] as const).find(([, v]) => v)
    const form = named ? `${named[0]}="${named[1]}"` : action ? `action="${action}"` : `form ${place}`
    const inputName = attr(file, 'name')
    out.push({ form, input: inputName ? `name="${inputName}"` : 'a file input', get })
  }
  return out
}

/** A form posting to a form endpoint on another origin with a relative `_next` (relativeNextsToEndpoint). */
export interface RelativeNext {
  /** How the page names the form, as FileAsName's `form`. */
  form: string
  /** The form's action, as written. */
  action: string
  /** The `_next` value, as written. */
  next: string
}

// an absolute or protocol-relative action whose path is svc's public submit endpoint
const SUBMIT_ACTION = /^(?:https?:)?\/\/[^/?#]+\/api\/forms\/submit\/[^/?#]+/i

/**
 * The forms of a page that post to svc's submit endpoint on another origin (an absolute
 * `action`) with a `_next` relative to the page (`thanks.html`, `?x`; not `/...` nor a URL): a
 * browser's cross-origin post tells the endpoint only the page's origin (its Referer is cut
 * to it), so such a `_next` is resolved from the origin's root, not from the page
 * (decision NEW-FRIENDLY-1). Comments, scripts and templates are skipped; the first MiB read.
 */
export function relativeNextsToEndpoint(html: string): RelativeNext[] {
  const page = html.slice(0, 1 << 20).replace(QUIET, ' ')
  const out: RelativeNext[] = []
  for (const m of page.matchAll(FORM_TAG)) {
    const [, tag, body] = m
    if (body === undefined) break
    const action = attr(tag, 'action') ?? ''
    if (!SUBMIT_ACTION.test(action)) continue
    const input = inputsOf(body).find((i) => attr(i, 'name') === '_next')
    const next = input === undefined ? null : attr(input, 'value')
    if (next === null || next === '' || next.startsWith('/') || /^[a-z][a-z0-9+.-]*:/i.test(next)) continue
    const named = (['id', 'name'] as const).map((a) => [a, attr(tag, a)] as const).find(([, v]) => v)
    out.push({ form: named ? `${named[0]}="${named[1]}"` : `action="${action}"`, action, next })
  }
  return out
}

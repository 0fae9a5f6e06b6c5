import { eachTag, type Tag } from './html-tags.js'

const MAP: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

/**
 * Escapes text for HTML element content and quoted attribute values: & < > " ' (the one
 * implementation; the page templates of web/html.ts use it too). Not for unquoted
 * attributes, URLs or script content.
 */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => MAP[c])
}

/** A tag's attribute, trimmed, or null when the tag has none of that name. */
const value = (attrs: Readonly<Record<string, string>>, name: string): string | null => (Object.hasOwn(attrs, name) ? attrs[name].trim() : null)

// the tags that load a file the page shows or runs as it opens (not <a> or <form>: a link
// loads nothing until it is followed, and `<a href="/">` is common on sites built for a subpath)
const LOADING_TAGS = new Set(['script', 'link', 'img', 'source', 'iframe', 'embed', 'video', 'audio', 'track'])
// a <link> that loads part of the page (stylesheet, preload), not one that only points
// somewhere (canonical, alternate) or that the page works without (icon, manifest)
const LOADING_REL = /\b(?:stylesheet|preload|modulepreload)\b/i
/** How many root-absolute files rootResources names at most (a page's first few suffice). */
const MAX_RESOURCES = 8
// what a URL resolves against, to tell a path on the page's own origin from another origin's
const ORIGIN = 'http://origin.invalid'

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
  // the first <base href> (the document's base URL), and each loading tag's src or href
  // (whichever it names first), in one pass of the tokenizer
  let baseHref: string | null = null
  const values: string[] = []
  eachTag(html.slice(0, 1 << 20), (t) => {
    if (t.end) return
    if (t.name === 'base') baseHref ??= value(t.attrs, 'href')
    if (!LOADING_TAGS.has(t.name) || (t.name === 'link' && !LOADING_REL.test(t.attrs.rel ?? ''))) return
    const a = Object.keys(t.attrs).find((k) => k === 'src' || k === 'href')
    if (a !== undefined) values.push(t.attrs[a].trim())
  })
  // a root-absolute base makes every relative URL root-absolute; any other leaves them relative
  // (assigned in the callback, which the compiler does not follow)
  const href = baseHref as string | null
  const base = href !== null && rootAbsolute(href) ? ORIGIN + href : null
  const out: string[] = []
  for (const v of values) {
    let url: string | null = null
    if (rootAbsolute(v)) url = v.replace(/[?#].*$/s, '')
    else if (base !== null && v !== '' && !v.startsWith('#')) {
      const u = URL.canParse(v, base) ? new URL(v, base) : null
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

/** A form whose file input a browser sends as the file's name alone (fileInputsSentAsNames). */
export interface FileAsName {
  /** How the page names the form: `id="contact"`, `name="apply"`, `action="..."`, or `form 2` (its place). */
  form: string
  /** The file input's name (`name="cv"`), or `a file input` when it has none. */
  input: string
  /** Whether the form is sent by GET (a query string carries names only, whatever its enctype). */
  get: boolean
}

/** A form of a page with the inputs and buttons inside it (PageRead). */
export interface PageForm {
  attrs: Readonly<Record<string, string>>
  inputs: Array<Readonly<Record<string, string>>>
  /** A submit button (or input) of the form sends it as multipart itself (`formenctype`). */
  multipartButton: boolean
  /** Its place among the page's forms, from 1. */
  place: number
}

/**
 * What the upload's checks read of a page (its first MiB), from one pass of the tokenizer
 * (readPage): its forms, its module scripts and, when asked for, its text. The functions
 * below take it, or the page itself and read it then.
 */
export interface PageRead {
  /** Each form with the inputs up to its `</form>`, the next `<form>` or the page's end. */
  readonly forms: readonly PageForm[]
  /** The `src` of each `<script type="module">`, as written, trimmed. */
  readonly moduleSources: readonly string[]
  /** The page's text as pageText (util/html-tags.ts) gives it; null when not asked for. */
  readonly text: string | null
}

/**
 * Reads a page once for every check of an upload (the owner's warnings, and with `text` the
 * phishing heuristics' words): tags as eachTag reads them, so nothing in comments, scripts
 * or templates counts. The first MiB.
 */
export function readPage(html: string, opts: { text?: boolean } = {}): PageRead {
  const forms: PageForm[] = []
  const moduleSources: string[] = []
  const parts: string[] = []
  let open: PageForm | null = null
  const onTag = (t: Tag) => {
    if (t.name === 'form') {
      open = t.end ? null : { attrs: t.attrs, inputs: [], multipartButton: false, place: forms.length + 1 }
      if (open) forms.push(open)
      return
    }
    if (t.end) return
    if (t.name === 'script' && value(t.attrs, 'type')?.toLowerCase() === 'module') {
      const src = value(t.attrs, 'src')
      if (src) moduleSources.push(src)
    }
    if (open === null) return
    if (t.name === 'input') open.inputs.push(t.attrs)
    if ((t.name === 'input' || t.name === 'button') && (t.attrs.formenctype ?? '').trim().toLowerCase() === 'multipart/form-data') open.multipartButton = true
  }
  eachTag(html.slice(0, 1 << 20), onTag, opts.text === true ? (p) => parts.push(p) : undefined)
  return { forms, moduleSources, text: opts.text === true ? parts.join('') : null }
}

/** A page read, or read now. */
const readOf = (page: string | PageRead): PageRead => (typeof page === 'string' ? readPage(page) : page)

/** How the page names a form: `id="contact"`, `name="apply"`, else `fallback`. */
function formName(f: PageForm, fallback: string): string {
  const named = (['id', 'name'] as const).map((a) => [a, value(f.attrs, a)] as const).find(([, v]) => v)
  return named ? `${named[0]}="${named[1]}"` : fallback
}

/**
 * The forms of a page with an `<input type="file">` that a browser submits without the file:
 * a form without `enctype="multipart/form-data"` (or sent by GET) posts only the file's name,
 * as a text field. Comments, scripts and templates are skipped. Reads the first MiB.
 */
export function fileInputsSentAsNames(page: string | PageRead): FileAsName[] {
  const out: FileAsName[] = []
  for (const f of readOf(page).forms) {
    const file = f.inputs.find((i) => value(i, 'type')?.toLowerCase() === 'file')
    if (file === undefined) continue
    const get = (value(f.attrs, 'method') ?? 'get').toLowerCase() !== 'post'
    const multipart = (value(f.attrs, 'enctype') ?? '').toLowerCase() === 'multipart/form-data' || f.multipartButton
    if (!get && multipart) continue
    const action = value(f.attrs, 'action') ?? ''
    const inputName = value(file, 'name')
    out.push({ form: formName(f, action ? `action="${action}"` : `form ${f.place}`), input: inputName ? `name="${inputName}"` : 'a file input', get })
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
 * (decision 321). Comments, scripts and templates are skipped; the first MiB read.
 */
export function relativeNextsToEndpoint(page: string | PageRead): RelativeNext[] {
  const out: RelativeNext[] = []
  for (const f of readOf(page).forms) {
    const action = value(f.attrs, 'action') ?? ''
    if (!SUBMIT_ACTION.test(action)) continue
    const input = f.inputs.find((i) => value(i, 'name') === '_next')
    const next = input === undefined ? null : value(input, 'value')
    if (next === null || next === '' || next.startsWith('/') || /^[a-z][a-z0-9+.-]*:/i.test(next)) continue
    out.push({ form: formName(f, `action="${action}"`), action, next })
  }
  return out
}

// sources only a bundler's build makes runnable: browsers run none of these as a module script
const SOURCE_ONLY = /\.(?:jsx|tsx|ts|mts|cts|vue|svelte)$/i

/** The `src` of each `<script type="module">` of a page (the first MiB), as written, trimmed. */
export function moduleScriptSources(page: string | PageRead): string[] {
  return [...readOf(page).moduleSources]
}

/**
 * Whether a module script's `src` names a file of the site that no browser runs before a
 * bundler's build: JSX, TypeScript, a Vue or Svelte component (`/src/main.tsx`). A URL with
 * a scheme or another host is not the site's.
 */
export const sourceOnlyModule = (src: string): boolean =>
  !src.startsWith('//') && !/^[a-z][a-z0-9+.-]*:/i.test(src) && SOURCE_ONLY.test(src.replace(/[?#].*$/s, ''))

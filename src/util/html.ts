const MAP: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

/**
 * Escapes text for HTML element content and quoted attribute values: & < > " ' (the one
 * implementation; the page templates of web/html.ts use it too). Not for unquoted
 * attributes, URLs or script content.
 */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => MAP[c])
}

// a tag that loads a file the page shows or runs as it opens, and its attributes (not <a> or
// <form>: a link loads nothing until it is followed, and `<a href="/">` is common on sites
// built for a subpath)
const LOADING_TAG = /<(script|link|img|source|iframe|embed|video|audio|track)\b([^>]*)>/gi
// a <link> that loads part of the page (stylesheet, preload), not one that only points
// somewhere (canonical, alternate) or that the page works without (icon, manifest)
const LOADING_REL = /(?:^|\s)rel\s*=\s*["']?[^"'>]*\b(?:stylesheet|preload|modulepreload)\b/i
// a src= or href= and its value (quoted or not)
const SRC_OR_HREF = /(?:^|\s)(?:src|href)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>'"]+))/i
// the document's base URL (the first <base href>): relative URLs resolve against it
const BASE_TAG = /<base\b[^>]*?\shref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>'"]+))/i
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
  const head = html.slice(0, 1 << 20)
  const b = BASE_TAG.exec(head)
  const baseHref = b === null ? null : (b[1] ?? b[2] ?? b[3]).trim()
  // a root-absolute base makes every relative URL root-absolute; any other leaves them relative
  const base = baseHref !== null && rootAbsolute(baseHref) ? ORIGIN + baseHref : null
  const out: string[] = []
  for (const m of head.matchAll(LOADING_TAG)) {
    if (m[1].toLowerCase() === 'link' && !LOADING_REL.test(m[2])) continue
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

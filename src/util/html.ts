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
// a src= or href= whose value starts with one '/' (not '//', a scheme-relative URL)
const ROOT_ABSOLUTE = /(?:^|\s)(?:src|href)\s*=\s*(?:"(\/(?!\/)[^"]*)"|'(\/(?!\/)[^']*)'|(\/(?!\/)[^\s>]*))/i
/** How many root-absolute files rootResources names at most (a page's first few suffice). */
const MAX_RESOURCES = 8

/**
 * The root-absolute paths (`/assets/app.js`, without query or fragment) of the files a page
 * loads as it opens, as a build for `/` writes them (Vite's default base): such a site works
 * only at the root of an origin. Reads the first MiB; at most MAX_RESOURCES paths, in order.
 */
export function rootResources(html: string): string[] {
  const out: string[] = []
  for (const m of html.slice(0, 1 << 20).matchAll(LOADING_TAG)) {
    if (m[1].toLowerCase() === 'link' && !LOADING_REL.test(m[2])) continue
    const a = ROOT_ABSOLUTE.exec(m[2])
    if (a === null) continue
    const url = (a[1] ?? a[2] ?? a[3]).replace(/[?#].*$/s, '')
    if (url !== '/' && !out.includes(url)) out.push(url)
    if (out.length >= MAX_RESOURCES) break
  }
  return out
}

/**
 * Whether a site is built for the root of an origin: its index.html loads at least one file
 * by a root-absolute path that the site itself has (`has`, given the raw path). A page that
 * only loads the user's shared files from `/` (another project's `/common/theme.css`) is not.
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

const MAP: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

/**
 * Escapes text for HTML element content and quoted attribute values: & < > " ' (the one
 * implementation; the page templates of web/html.ts use it too). Not for unquoted
 * attributes, URLs or script content.
 */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => MAP[c])
}

// a src= or href= whose value starts with one '/' (not '//', a scheme-relative URL)
const ROOT_ABSOLUTE = /\s(?:src|href)\s*=\s*["']?\/(?!\/)/i

/**
 * Whether a site's index.html loads files by root-absolute paths (`src="/assets/app.js"`, the
 * build of Vite's default base): such a site works only at the root of an origin. Reads the
 * first MiB.
 */
export const loadsFromRoot = (html: string): boolean => ROOT_ABSOLUTE.test(html.slice(0, 1 << 20))

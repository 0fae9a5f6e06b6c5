const MAP: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

/**
 * Escapes text for HTML element content and quoted attribute values: & < > " ' (the one
 * implementation; the page templates of web/html.ts use it too). Not for unquoted
 * attributes, URLs or script content.
 */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => MAP[c])
}

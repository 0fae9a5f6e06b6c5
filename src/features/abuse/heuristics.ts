/**
 * Upload-time heuristics: signs of a phishing page, for review (they never block an upload).
 * Two rules:
 * - credential harvesting: a password or seed-phrase field together with a form that posts
 *   to another site (an absolute or protocol-relative action whose host is not the page's);
 * - brand impersonation: a login page (a password field) that names a brand from the
 *   `brand_words` setting.
 * Plain pattern matching on the first bytes of the page: cheap, and wrong in both directions
 * sometimes, which is why a hit only opens a report.
 */

/** Bytes of a page the heuristics read. */
export const SCAN_MAX_BYTES = 512 * 1024

// Each tag pattern reads a tag's attribute text up to its `>` (or the page's end) in one match,
// and the attributes are then read in that text: a pattern that searched past `[^>]*` for an
// attribute rescanned to the next `>` from every `<input`, quadratic work on a crafted page
// (decision NEW-SECREVIEW-1). What each finds is unchanged.
const INPUT_TAG = /<input\b([^>]*)/gi
const FIELD_TAG = /<(?:input|textarea)\b([^>]*)/gi
const FORM_TAG = /<form\b([^>]*)/gi
const PASSWORD_TYPE = /\btype\s*=\s*["']?password\b/i
// a field's naming attribute, up to where its value starts
const NAMING_ATTR = /\b(?:name|id|placeholder|aria-label)\s*=\s*["']?/gi
const SEED_WORDS = /seed|mnemonic|recovery[\s_-]*phrase|secret[\s_-]*phrase|private[\s_-]*key|wallet[\s_-]*phrase/i
const SEED_TEXT = /\b(?:seed phrase|recovery phrase|secret recovery|mnemonic phrase|12[\s-]word|24[\s-]word)\b/i
const FORM_ACTION = /\baction\s*=\s*(?:["']\s*)?((?:https?:)?\/\/[^\s"'>]+)/gi

/** The attribute texts of the tags a pattern of the three above finds. */
const tagTexts = (html: string, tag: RegExp): string[] => [...html.matchAll(tag)].map((m) => m[1])
/**
 * Whether a field's text names it as a seed phrase's (or a private key's) field: a seed word
 * after a naming attribute's `=`, before the next quote. Each stretch between quotes is read
 * once: a later attribute in a stretch already read sees a part of what the first saw.
 */
function seedField(text: string): boolean {
  let read = -1
  for (const a of text.matchAll(NAMING_ATTR)) {
    const from = a.index + a[0].length
    if (from <= read) continue
    const quote = /["']/g
    quote.lastIndex = from
    read = quote.exec(text)?.index ?? text.length
    if (SEED_WORDS.test(text.slice(from, read))) return true
  }
  return false
}

/**
 * The page's text without its tags and scripts, as the brand rule reads it. A script left
 * open runs to the page's end; a `<` after the page's last `>` closes no tag and stays text.
 */
function visibleText(html: string): string {
  const noScripts = html.replace(/<script\b[\s\S]*?(?:<\/script>|$)/gi, ' ')
  const end = noScripts.lastIndexOf('>') + 1
  return (noScripts.slice(0, end).replace(/<[^>]+>/g, ' ') + noScripts.slice(end)).toLowerCase()
}

/** The first `<title>`'s text when it is closed, else ''. */
function titleText(html: string): string {
  const open = /<title\b[^>]*(>)?/i.exec(html)
  if (open === null || open[1] === undefined) return ''
  const from = open.index + open[0].length
  const close = /<\/title>/gi
  close.lastIndex = from
  const c = close.exec(html)
  return c === null ? '' : html.slice(from, c.index).toLowerCase()
}

export interface ScanContext {
  /** Hosts that count as the page's own (the service's, the user's origin): lower case. */
  ownHosts: string[]
  /** Brand words, lower case. */
  brands: string[]
}

/** The reasons a page looks like phishing (empty: nothing found). */
export function phishingSigns(html: string, ctx: ScanContext): string[] {
  const reasons: string[] = []
  const password = tagTexts(html, INPUT_TAG).some((t) => PASSWORD_TYPE.test(t))
  const seed = tagTexts(html, FIELD_TAG).some(seedField) || (SEED_TEXT.test(html) && /<(?:input|textarea)\b/i.test(html))
  if (password || seed) {
    const foreign: string[] = []
    for (const m of tagTexts(html, FORM_TAG).flatMap((t) => [...t.matchAll(FORM_ACTION)])) {
      let host: string
      try {
        host = new URL(m[1].startsWith('//') ? `https:${m[1]}` : m[1]).hostname.toLowerCase()
      } catch {
        continue
      }
      if (!ctx.ownHosts.includes(host)) foreign.push(host)
    }
    if (foreign.length > 0)
      reasons.push(`${password ? 'password' : 'seed-phrase'} field with a form posting to another site (${[...new Set(foreign)].slice(0, 3).join(', ')})`)
  }
  if (password) {
    const text = visibleText(html)
    const title = titleText(html)
    const hits = ctx.brands.filter((b) => b && new RegExp(`(^|[^a-z0-9])${b.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}($|[^a-z0-9])`).test(`${title} ${text}`))
    if (hits.length > 0) reasons.push(`login page naming ${hits.slice(0, 3).join(', ')}`)
  }
  return reasons
}

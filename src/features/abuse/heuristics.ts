import { pageText } from '../../util/html-tags.js'
import { readPage, type PageRead } from '../../util/html.js'

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

// Each pattern reads a tag's attributes up to the next < or > and at most 1,024 characters
// of them, so a page of unclosed tags costs time linear in its length (an unbounded [^>]*
// rescans the rest of the page from every "<input": quadratic). They read the raw page,
// scripts included: a phishing kit often writes its form from one.
const PASSWORD_INPUT = /<input\b[^<>]{0,1024}\btype\s*=\s*["']?password\b/i
const SEED_FIELD =
  /<(?:input|textarea)\b[^<>]{0,1024}\b(?:name|id|placeholder|aria-label)\s*=\s*["']?[^"'<>]{0,128}(?:seed|mnemonic|recovery[\s_-]*phrase|secret[\s_-]*phrase|private[\s_-]*key|wallet[\s_-]*phrase)/i
const SEED_TEXT = /\b(?:seed phrase|recovery phrase|secret recovery|mnemonic phrase|12[\s-]word|24[\s-]word)\b/i
const FORM_ACTION = /<form\b[^<>]{0,1024}\baction\s*=\s*["']?\s*((?:https?:)?\/\/[^\s"'<>]{1,2048})/gi

export interface ScanContext {
  /** Hosts that count as the page's own (the service's, the user's origin): lower case. */
  ownHosts: string[]
  /** Brand words, lower case. */
  brands: string[]
}

/**
 * One page of an upload: the reasons it looks like phishing (phishingSigns), and `each` given
 * the page's read for the caller's own checks (the owner's warnings), from one pass of the
 * tokenizer between them: the read takes the page's text too when the heuristics read it (a
 * login page), and is made only when one of them asks for it. `html`: the scan's first
 * SCAN_MAX_BYTES of the page, all of which the read (its first MiB) covers.
 */
export function scanPage(html: string, ctx: ScanContext, each?: (read: () => PageRead) => void): string[] {
  const withText = PASSWORD_INPUT.test(html)
  let read: PageRead | null = null
  const readOnce = () => (read ??= readPage(html, { text: withText }))
  each?.(readOnce)
  return phishingSigns(html, ctx, () => readOnce().text ?? pageText(html))
}

/**
 * The reasons a page looks like phishing (empty: nothing found). `words`: the page's text as
 * pageText gives it, asked for only for a page with a password field; by default read here.
 */
export function phishingSigns(html: string, ctx: ScanContext, words: () => string = () => pageText(html)): string[] {
  const reasons: string[] = []
  const password = PASSWORD_INPUT.test(html)
  const seed = SEED_FIELD.test(html) || (SEED_TEXT.test(html) && /<(?:input|textarea)\b/i.test(html))
  if (password || seed) {
    const foreign: string[] = []
    for (const m of html.matchAll(FORM_ACTION)) {
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
    // the words a visitor reads, the title's too (pageText: one linear pass)
    const text = words().toLowerCase()
    const hits = ctx.brands.filter((b) => b && new RegExp(`(^|[^a-z0-9])${b.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}($|[^a-z0-9])`).test(text))
    if (hits.length > 0) reasons.push(`login page naming ${hits.slice(0, 3).join(', ')}`)
  }
  return reasons
}

/**
 * Site rules of a published project, in the conventions users know from Netlify and
 * Cloudflare Pages: `_redirects` (redirects, rewrites, the SPA fallback) and `_headers`
 * (extra headers by path pattern). Parsing is strict: a bad line is refused with its file
 * and line number, so a publish either takes every rule or none. Matching is pure and
 * allocation-light: patterns compile once to regular expressions.
 */
import { decodeSegment } from './paths.js'
import type { Text } from '../../errors/text.js'

/** Statuses a `_redirects` line may give: 200 rewrites, redirects, and 404/410 answers. */
export const RULE_STATUSES = [200, 301, 302, 303, 307, 308, 404, 410] as const
export type RuleStatus = (typeof RULE_STATUSES)[number]

/** Lines of `_headers` (Cloudflare Pages takes 100). */
export const MAX_RULES = 1000
/**
 * Lines of `_redirects`: the old URLs of a moved site, one line each, as Netlify and Cloudflare
 * Pages (2,000 static and 100 dynamic) take them; lines without placeholders are found by
 * their path (SiteRules.literal) and the others by their path's segments (SiteRules.dynamic),
 * so a request meets only the lines its path may match, whatever their number.
 */
export const MAX_REDIRECTS = 10_000
/** The rule files of a project, at its root: read at publish, never served. */
export const RULE_FILES = ['_redirects', '_headers'] as const
const MAX_LINE = 2000

/**
 * A Netlify query match of a `_redirects` line (`/store id=:id /blog/:id`): the request's
 * query must have the parameter `name` (its first value, form-decoded), equal to `equals`,
 * or, with `bind`, any non-empty value, which fills the placeholder `:bind` of the target.
 */
export type QueryMatch = { name: string; bind: string } | { name: string; equals: string }

export interface RedirectRule {
  /** A path pattern, or a URL for a line of one host (`https://old.example.com/*`: hostOf). */
  from: string
  /** Query matches, all required; absent: the rule matches whatever the query. */
  query?: QueryMatch[]
  to: string
  status: RuleStatus
  /** `!` after the status: applies even when a file exists at the path (no shadowing). */
  force: boolean
  line: number
}

export interface HeaderRule {
  /** A path pattern, or a URL for a line of one host (`https://:project.pages.dev/*`: hostOf). */
  pattern: string
  headers: Array<[string, string]>
  /**
   * Cloudflare Pages' `! Name` lines: names whose values earlier matching blocks set are
   * dropped before this block's own apply (the service's own headers are no block's). Absent
   * when the block has none, so a release without them reads the stored rule as before.
   */
  unset?: string[]
  line: number
}

/** A rule file that cannot be taken; the message (English) names the file and the line. */
export class RuleSyntaxError extends Error {
  constructor(
    readonly file: string,
    readonly line: number,
    readonly reason: Text,
  ) {
    super(`${file}, line ${line}: ${reason.en}`)
  }

  /** The file, the line and why, in both languages (the detail of 1314). */
  get text(): Text {
    return { zh: `${this.file} 第 ${this.line} 行：${this.reason.zh}`, en: this.message }
  }
}

/**
 * Headers a `_headers` rule may not set: framing and caching the service computes, cookies,
 * credentials on public content, Clear-Site-Data (its "cookies" clear the whole registrable
 * domain: the service's too, where it shares one), and a proxy's internal redirects and
 * caching (X-Accel-*, X-Sendfile: nginx in front would act on them). The service's own
 * security headers are sent whatever the rules say; a rule's Content-Security-Policy is an
 * extra policy, which only narrows.
 */
const FORBIDDEN_HEADERS = new Set([
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'trailer',
  'te',
  'etag',
  'last-modified',
  'content-range',
  'accept-ranges',
  'date',
  'server',
  'location',
  'vary',
  'age',
  'set-cookie',
  'access-control-allow-credentials',
  'x-content-type-options',
  'alt-svc',
  'clear-site-data',
  'x-accel-redirect',
  'x-accel-expires',
  'x-accel-buffering',
  'x-accel-limit-rate',
  'x-accel-charset',
  'x-sendfile',
  'basic-auth',
])
/**
 * Why a forbidden header is refused, where it is not one the service sets: Netlify's
 * `Basic-Auth` line asks its host for a password prompt; sent as a header it would hand the
 * password to every visitor of an open page.
 */
const REFUSAL: ReadonlyMap<string, Text> = new Map([
  [
    'basic-auth',
    {
      zh: 'Basic-Auth（Netlify 的密码保护）在这里不是头部：它会把密码展示给每位访客；请改用访客密码保护项目（svc access set）',
      en: "Basic-Auth (Netlify's password protection) is not a header here: it would show the password to every visitor; protect the project with a visitor password (svc access set) instead",
    },
  ],
])
/**
 * Forbidden headers whose line is taken when it asks for exactly what the service sends on
 * every answer (the security headers sites copy from their host's examples): the publish
 * passes, and compileRules leaves the line out, so the service's own header goes out once.
 */
const SERVICE_SENDS: ReadonlyMap<string, RegExp> = new Map([['x-content-type-options', /^nosniff$/i]])
/**
 * Headers a rule sets on a site's own origins but not on the path form, whose answers come
 * from the service's origin: that origin's error reporting (NEL sends its requests' URLs to
 * the named endpoint), client hints, login status, service worker scope and HTTPS-only rule
 * (HSTS, whose includeSubDomains would bind every user's origin under it) stay the service's.
 */
const OWN_ORIGIN_ONLY = new Set([
  'nel',
  'report-to',
  'reporting-endpoints',
  'accept-ch',
  'critical-ch',
  'set-login',
  'service-worker-allowed',
  'strict-transport-security',
])
/**
 * Whether a header tells caches how long to keep an answer: Cache-Control, and the fields a CDN
 * obeys before it (RFC 9213 `CDN-Cache-Control` and the other `*-Cache-Control` it names,
 * `Surrogate-Control`, `Edge-Control`). What strips a rule's Cache-Control strips them all.
 */
export const isCacheField = (name: string): boolean => {
  const n = name.toLowerCase()
  return n.endsWith('cache-control') || n === 'surrogate-control' || n === 'edge-control'
}
/**
 * A path's rule headers as a user's origin sends them, where the project lives under `base`
 * (`/{project}`, as the request spells it): `Service-Worker-Allowed` names a path of the project, as the rule's pattern
 * does, so `/` is the project's root there, and a value that climbs out of the project (`../..`,
 * another origin's URL) stops at that root. A worker of one project never takes the pages of the
 * user's other projects (decision 274). `p`: the path in the project the value is read from.
 */
export function onUserOrigin(headers: Array<[string, string]>, base: string, p: string): Array<[string, string]> {
  const out: Array<[string, string]> = []
  for (const [name, value] of headers) {
    if (name.toLowerCase() !== 'service-worker-allowed') {
      out.push([name, value])
      continue
    }
    let path: string
    try {
      path = new URL(value.trim(), `http://project${p}`).pathname
    } catch {
      continue // no scope a browser could take
    }
    out.push([name, base + path])
  }
  return out
}
/**
 * A path's rule headers as the path form sends them: OWN_ORIGIN_ONLY left out, and a `Refresh`
 * that sends the page to another origin, which the service's origin would otherwise do for the
 * site, as an open redirect under its name (decision 298); the site's own origins
 * send it.
 */
export const onServiceOrigin = (headers: Array<[string, string]>): Array<[string, string]> =>
  headers.filter(([name, value]) => {
    const n = name.toLowerCase()
    return !OWN_ORIGIN_ONLY.has(n) && (n !== 'refresh' || !refreshLeaves(value))
  })

const ASCII_SPACE = /[\t\n\f\r ]/
/** A page's URL to read a relative Refresh URL against: only its origin counts. */
const REFRESH_BASE = 'https://service.invalid/user/project/page'
/**
 * Whether a `Refresh` value sends the page to a URL of another origin (or one that does not
 * parse), read as the HTML standard's declarative refresh steps read it: a delay, then `;`,
 * `,` or spaces, then the URL, after an optional `url=` and quote. A plain reload is not.
 */
export function refreshLeaves(value: string): boolean {
  let i = 0
  const at = () => value[i] ?? ''
  while (ASCII_SPACE.test(at())) i++
  const digits = i
  while (/[0-9]/.test(at())) i++
  if (i === digits && at() !== '.') return false
  while (/[0-9.]/.test(at())) i++
  if (i >= value.length) return false
  if (at() !== ';' && at() !== ',' && !ASCII_SPACE.test(at())) return false
  while (ASCII_SPACE.test(at())) i++
  if (at() === ';' || at() === ',') i++
  while (ASCII_SPACE.test(at())) i++
  if (i >= value.length) return false
  // `url` then `=`: each step stops at the first letter that differs, and the URL starts there
  skip: {
    for (const c of 'url') {
      if (at().toLowerCase() !== c) break skip
      i++
    }
    while (ASCII_SPACE.test(at())) i++
    if (at() !== '=') break skip
    i++
    while (ASCII_SPACE.test(at())) i++
  }
  const quote = at() === "'" || at() === '"' ? at() : ''
  if (quote !== '') i++
  let url = value.slice(i)
  if (quote !== '' && url.includes(quote)) url = url.slice(0, url.indexOf(quote))
  try {
    return new URL(url, REFRESH_BASE).origin !== new URL(REFRESH_BASE).origin
  } catch {
    return true
  }
}
const TOKEN_RE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
// visible ASCII, spaces and tabs: HTTP sends header values as bytes, and anything else would be
// refused when sent (above U+00FF) or arrive as other characters (Latin-1 bytes)
const VALUE_RE = /^[\t\x20-\x7e]*$/

/**
 * A rule file's bytes as text: UTF-8 (a byte-order mark is dropped when its lines are read),
 * or UTF-16 when a byte-order mark says so, as Windows PowerShell's `>` writes files.
 */
export function ruleText(bytes: Buffer): string {
  if (bytes.length >= 2 && bytes[0] === 0xff && bytes[1] === 0xfe) return bytes.subarray(2).toString('utf16le')
  if (bytes.length >= 2 && bytes[0] === 0xfe && bytes[1] === 0xff) return Buffer.from(bytes.subarray(2)).swap16().toString('utf16le')
  return bytes.toString('utf8')
}

/** Splits a rule file into its lines, numbered from 1, without comments and blank lines. */
function lines(text: string, file: string): Array<{ n: number; raw: string }> {
  const out: Array<{ n: number; raw: string }> = []
  text
    .replace(/^\uFEFF/, '')
    .split(/\r?\n/)
    .forEach((raw, i) => {
      if (raw.length > MAX_LINE) throw new RuleSyntaxError(file, i + 1, { zh: `行超过 ${MAX_LINE} 个字符`, en: `line longer than ${MAX_LINE} characters` })
      const t = raw.trim()
      if (t === '' || t.startsWith('#')) return
      out.push({ n: i + 1, raw })
    })
  return out
}

/**
 * Checks a path pattern: absolute, with `:name` segments and at most one `*`: at its end in
 * `_redirects`, anywhere in `_headers` (`/*.js` or `/blog/*.html`, as Netlify's deploys and
 * Cloudflare Pages take them). One, so a match costs time linear in the path's length.
 */
function checkPattern(p: string, file: string, n: number, what: 'from' | 'pattern', innerStar = false): void {
  const w = what === 'pattern' ? '路径模式' : what
  if (!p.startsWith('/')) throw new RuleSyntaxError(file, n, { zh: `${w} "${p}" 须以 / 开头`, en: `${what} "${p}" must start with /` })
  const star = p.indexOf('*')
  if (star >= 0 && p.indexOf('*', star + 1) >= 0)
    throw new RuleSyntaxError(file, n, { zh: `${w} "${p}"：每个模式最多一个 *`, en: `${what} "${p}": one * per pattern` })
  if (star >= 0 && star !== p.length - 1 && !innerStar)
    throw new RuleSyntaxError(file, n, { zh: `${w} "${p}"：* 只能位于模式末尾`, en: `${what} "${p}": * may only end the pattern` })
  if (/[?#]/.test(p))
    throw new RuleSyntaxError(file, n, { zh: `${w} "${p}"：不匹配查询字符串和片段`, en: `${what} "${p}": query strings and fragments are not matched` })
  for (const seg of p.split('/')) {
    if (seg.startsWith(':') && !/^:[A-Za-z_][A-Za-z0-9_]*$/.test(seg))
      throw new RuleSyntaxError(file, n, { zh: `${w} "${p}"：占位符 "${seg}" 无效`, en: `${what} "${p}": bad placeholder "${seg}"` })
  }
}

/** A host label of a line: a DNS label, or a `:name` placeholder standing for any one label. */
const HOST_LABEL = /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?|:[A-Za-z_][A-Za-z0-9_]*)$/

/**
 * A pattern written as a URL (Netlify's domain-level `https://old.example.com/*`, Cloudflare's
 * `https://:project.pages.dev/*`) as its host, lowercased, and its path; a path pattern has
 * no host. The scheme is not kept: a site's hosts answer over HTTPS, plain HTTP being sent
 * there first. Stored as written, so a release without host lines never matches one (its
 * compiled pattern starts with `https:`, which no request path does).
 */
export function hostOf(p: string): { host?: string; path: string } {
  const m = /^https?:\/\/([^/]*)(.*)$/i.exec(p)
  return m ? { host: m[1].toLowerCase(), path: m[2] === '' ? '/' : m[2] } : { path: p }
}

/** Checks a pattern's host (hostOf): DNS labels or `:name` ones, no port, no user; returns its path. */
function checkHost(p: string, file: string, n: number, what: 'from' | 'pattern'): string {
  const { host, path } = hostOf(p)
  if (host !== undefined && !host.split('.').every((label) => HOST_LABEL.test(label)))
    throw new RuleSyntaxError(file, n, {
      zh: `${what === 'pattern' ? '路径模式' : what} "${p}"：主机 "${host}" 无效（只写主机名，不带端口或用户，如 https://www.example.com/*）`,
      en: `${what} "${p}": "${host}" is not a host name (write the name alone, no port or user: https://www.example.com/*)`,
    })
  return path
}

const TRAILING_COMMENT = /\s#.*$/
/** A `Name=value` word: a Netlify condition (`Country=us`) or query match (`id=:id`), never a path or a status. */
const KEY_VALUE = /^[A-Za-z][A-Za-z0-9_-]*=/
const CONDITIONS = new Set(['country', 'language', 'role', 'cookie'])
const PLACEHOLDER_WORD = /^:[A-Za-z_][A-Za-z0-9_]*$/
/** A rule's target: a path of the site or another site's URL; the words between `from` and it are query matches. */
const isTarget = (word: string): boolean => word.startsWith('/') || /^https?:\/\//i.test(word)

/** Why a `Name=value` word (a Netlify condition) after the target cannot be taken: conditions are not supported. */
const conditionProblem = (word: string): Text => ({
  zh: `"${word}" 是条件（Country、Language、Role、Cookie），不支持条件（应为 "from [name=value ...] to [status]"）`,
  en: `"${word}" is a condition (Country, Language, Role, Cookie); conditions are not supported (expected "from [name=value ...] to [status]")`,
})

/**
 * Reads a query match word, `name=:placeholder` or `name=value`: the name and a literal value
 * are percent-decoded as a query is (`+` is a space); one parameter per word.
 */
function queryMatch(word: string, file: string, n: number): QueryMatch {
  const eq = word.indexOf('=')
  if (eq < 0) {
    throw new RuleSyntaxError(file, n, {
      zh: `"${word}" 既不是目标（以 / 或 http(s):// 开头），也不是查询匹配（name=value 或 name=:placeholder）`,
      en: `"${word}" is neither a target (starting with / or http(s)://) nor a query match (name=value or name=:placeholder)`,
    })
  }
  if (/[&?]/.test(word))
    throw new RuleSyntaxError(file, n, {
      zh: `查询匹配 "${word}"：每个词只能有一个 name=value，不能含 & 或 ?`,
      en: `query match "${word}": one name=value per word, without & or ?`,
    })
  const raw = word.slice(eq + 1)
  const [[name, value] = ['', '']] = new URLSearchParams(word)
  if (name === '') throw new RuleSyntaxError(file, n, { zh: `查询匹配 "${word}" 缺少参数名`, en: `query match "${word}" has no parameter name` })
  if (raw === '')
    throw new RuleSyntaxError(file, n, {
      zh: `查询匹配 "${word}"：须给出要匹配的值或 :placeholder`,
      en: `query match "${word}": give the value to match or a :placeholder`,
    })
  if (raw.startsWith(':')) {
    if (!PLACEHOLDER_WORD.test(raw))
      throw new RuleSyntaxError(file, n, { zh: `查询匹配 "${word}"：占位符 "${raw}" 无效`, en: `query match "${word}": bad placeholder "${raw}"` })
    return { name, bind: raw.slice(1) }
  }
  return { name, equals: value }
}

/**
 * The `:name`s of a target written where a value goes: starting a path segment, the query, a
 * query value or the fragment (after / ? & = #). Each must be one the line captures; a name
 * inside a word (`Help:Contents`, `#:~:text=`) is the URL's own text unless the line captures
 * it, as Cloudflare Pages reads targets.
 */
const placeholderSpots = (to: string): string[] => [...to.matchAll(/(?<=[/?&=#]):[A-Za-z_][A-Za-z0-9_]*/g)].map((m) => m[0])

/** A target that is neither a path of the site nor another site's URL. */
const badTarget = (to: string): Text => ({ zh: `目标 "${to}" 须以 / 开头或为 http(s) URL`, en: `target "${to}" must start with / or be an http(s) URL` })
const tooManyRules = (max: number): Text => ({ zh: `规则超过 ${max} 条`, en: `more than ${max} rules` })
/** A `_headers` path pattern with no header line under it. */
const noHeaders = (pattern: string): Text => ({ zh: `"${pattern}" 下没有任何头部`, en: `"${pattern}" has no headers under it` })

/**
 * Parses `_redirects`: lines `from [name=value ...] to [status][!]`; the first matching line
 * wins. Words between `from` and the target are query matches, as Netlify reads them; a
 * forward rule (`/static/* 200`) has no target and rewrites to its own path.
 */
export function parseRedirects(text: string, file = '_redirects'): RedirectRule[] {
  const rules: RedirectRule[] = []
  for (const { n, raw } of lines(text, file)) {
    // a comment may end a line, as in Netlify's files: `#` after a space (a target's own
    // fragment, `/about#top`, has none before it)
    const parts = raw.replace(TRAILING_COMMENT, '').trim().split(/\s+/)
    if (KEY_VALUE.test(parts[0])) {
      const what: Text = CONDITIONS.has(parts[0].slice(0, parts[0].indexOf('=')).toLowerCase())
        ? { zh: '是条件（Country、Language、Role、Cookie），不支持条件', en: 'is a condition (Country, Language, Role, Cookie); conditions are not supported' }
        : { zh: '匹配一个查询参数', en: 'matches a query parameter' }
      throw new RuleSyntaxError(file, n, {
        zh: `"${parts[0]}" ${what.zh}，且它前面没有 "from to"（应为 "from to [status]"）`,
        en: `"${parts[0]}" ${what.en}, and the line has no "from to" before it (expected "from to [status]")`,
      })
    }
    if (parts.length < 2) throw new RuleSyntaxError(file, n, { zh: '应为 "from to [status]"', en: 'expected "from to [status]"' })
    if (/^\d{3}!?$/.test(parts[1])) {
      // Netlify's forward rule, `/static/* 200`: no target, the path itself (the files under
      // it as they are, a 404 where there is none, never a later fallback)
      const { path } = hostOf(parts[0])
      if (!path.endsWith('/*') || !/^200!?$/.test(parts[1]))
        throw new RuleSyntaxError(file, n, {
          zh: `"${parts[1]}" 之前没有目标：只有转发规则（"/path/* 200"）可以省略目标`,
          en: `no target before "${parts[1]}": only a forward rule ("/path/* 200") may leave it out`,
        })
      parts.splice(1, 0, `${path.slice(0, -2)}/:splat`)
    }
    const at = parts.findIndex((p, i) => i > 0 && isTarget(p))
    if (at < 0) {
      if (parts.length === 2 && !parts[1].includes('=')) throw new RuleSyntaxError(file, n, badTarget(parts[1]))
      throw new RuleSyntaxError(file, n, {
        zh: `"${parts.slice(1).join(' ')}" 之后没有目标（应为 "from [name=value ...] to [status]"，目标以 / 或 http(s):// 开头）`,
        en: `no target after "${parts.slice(1).join(' ')}" (expected "from [name=value ...] to [status]", a target starting with / or http(s)://)`,
      })
    }
    const query = parts.slice(1, at).map((w) => queryMatch(w, file, n))
    const [written, to, statusRaw = '301', ...more] = [parts[0], ...parts.slice(at)]
    const from = checkHost(written, file, n, 'from')
    const condition = [statusRaw, ...more].find((p) => KEY_VALUE.test(p))
    if (condition !== undefined) throw new RuleSyntaxError(file, n, conditionProblem(condition))
    if (more.length > 0)
      throw new RuleSyntaxError(file, n, {
        zh: `多余的 "${more.join(' ')}"（应为 "from [name=value ...] to [status]"）`,
        en: `unexpected "${more.join(' ')}" (expected "from [name=value ...] to [status]")`,
      })
    checkPattern(from, file, n, 'from')
    const m = /^(\d{3})(!?)$/.exec(statusRaw)
    const status = m ? Number(m[1]) : NaN
    if (!m || !(RULE_STATUSES as readonly number[]).includes(status)) {
      throw new RuleSyntaxError(file, n, {
        zh: `状态码 "${statusRaw}" 须为 ${RULE_STATUSES.join('、')} 之一（后面可加 !）`,
        en: `status "${statusRaw}" must be one of ${RULE_STATUSES.join(', ')} (optionally followed by !)`,
      })
    }
    const external = /^https?:\/\/[^/\s]+/i.test(to)
    if (!external && !to.startsWith('/')) throw new RuleSyntaxError(file, n, badTarget(to))
    if (external && status !== 301 && status !== 302 && status !== 303 && status !== 307 && status !== 308) {
      throw new RuleSyntaxError(file, n, {
        zh: `目标 "${to}"：指向其他站点时只能是重定向（301、302、303、307、308），不能是 ${status}`,
        en: `target "${to}": another site can only be a redirect (301, 302, 303, 307, 308), not ${status}`,
      })
    }
    const names = new Set<string>()
    const capture = (name: string) => {
      if (names.has(name)) throw new RuleSyntaxError(file, n, { zh: `:${name} 被捕获了两次`, en: `:${name} is captured twice` })
      names.add(name)
    }
    for (const seg of from.split('/')) if (seg.startsWith(':')) capture(seg.slice(1))
    if (from.endsWith('*')) capture('splat')
    const asked = new Set<string>()
    for (const q of query) {
      if (asked.has(q.name)) throw new RuleSyntaxError(file, n, { zh: `查询参数 "${q.name}" 被匹配了两次`, en: `query parameter "${q.name}" is matched twice` })
      asked.add(q.name)
      if ('bind' in q) capture(q.bind)
    }
    for (const used of placeholderSpots(to)) {
      if (names.has(used.slice(1))) continue
      const by: Text =
        query.length > 0
          ? { zh: `"${from}" 及其查询匹配都没有捕获它`, en: `neither "${from}" nor its query matches capture` }
          : { zh: `"${from}" 没有捕获它`, en: `"${from}" does not capture` }
      throw new RuleSyntaxError(file, n, { zh: `目标使用了 ${used}，但 ${by.zh}`, en: `target uses ${used}, which ${by.en}` })
    }
    const inHost = hostPlaceholder(ownHost(to), (name) => names.has(name))
    if (inHost !== null) {
      throw new RuleSyntaxError(file, n, {
        zh: `${inHost} 位于 "${to}" 的主机部分：访客提供的值不能决定重定向去往哪个站点；请把占位符放在路径中（https://example.com/:splat），或为每个主机各写一行`,
        en: `${inHost} is in the host of "${to}": a visitor's value cannot choose the site a redirect sends them to; put placeholders in the path (https://example.com/:splat), or write a line for each host`,
      })
    }
    if (rules.length >= MAX_REDIRECTS) throw new RuleSyntaxError(file, n, tooManyRules(MAX_REDIRECTS))
    rules.push({
      from: written,
      ...(query.length > 0 ? { query } : {}),
      to,
      status: status as RuleStatus,
      force: m[2] === '!',
      line: n,
    })
  }
  return rules
}

/**
 * Parses `_headers`: a path pattern, then its `Name: value` lines. A line is a pattern when it
 * starts with `/` or `http(s)://` and a header line otherwise, whatever its indentation, as
 * Netlify's and Cloudflare Pages' parsers tell them apart (files are written flush left too).
 */
export function parseHeaders(text: string, file = '_headers'): HeaderRule[] {
  const rules: HeaderRule[] = []
  let current: HeaderRule | null = null
  let captured: string[] = []
  for (const { n, raw } of lines(text, file)) {
    const t = raw.trim()
    if (t.startsWith('/') || /^https?:\/\//i.test(t)) {
      const written = t
      if (/\s/.test(written))
        throw new RuleSyntaxError(file, n, {
          zh: `"${written}"：路径模式不能含空格（请写成 %20）`,
          en: `"${written}": a path pattern has no spaces (write them %20)`,
        })
      const pattern = checkHost(written, file, n, 'pattern')
      checkPattern(pattern, file, n, 'pattern', true)
      if (current && isEmpty(current)) throw new RuleSyntaxError(file, current.line, noHeaders(current.pattern))
      if (rules.length >= MAX_RULES) throw new RuleSyntaxError(file, n, tooManyRules(MAX_RULES))
      current = { pattern: written, headers: [], line: n }
      captured = compile(pattern).names
      rules.push(current)
      continue
    }
    if (t.startsWith('!')) {
      // Cloudflare Pages' detach: `! Name` drops what earlier matching blocks set for Name
      const name = t.slice(1).trim()
      if (!TOKEN_RE.test(name)) throw new RuleSyntaxError(file, n, { zh: `"${name}" 不是有效的头部名称`, en: `"${name}" is not a valid header name` })
      if (!current) throw new RuleSyntaxError(file, n, { zh: '头部行出现在任何路径模式之前', en: 'a header line comes before any path pattern' })
      ;(current.unset ??= []).push(name)
      continue
    }
    const colon = t.indexOf(':')
    if (colon <= 0)
      throw new RuleSyntaxError(file, n, {
        zh: `应为 "Name: value" 或路径模式（以 / 开头），实际为 "${t}"`,
        en: `expected "Name: value" or a path pattern (starting with /), got "${t}"`,
      })
    if (!current) throw new RuleSyntaxError(file, n, { zh: '头部行出现在任何路径模式之前', en: 'a header line comes before any path pattern' })
    const name = t.slice(0, colon).trim()
    const value = t.slice(colon + 1).trim()
    if (!TOKEN_RE.test(name)) throw new RuleSyntaxError(file, n, { zh: `"${name}" 不是有效的头部名称`, en: `"${name}" is not a valid header name` })
    const lower = name.toLowerCase()
    if (FORBIDDEN_HEADERS.has(lower) && SERVICE_SENDS.get(lower)?.test(value) !== true) {
      throw new RuleSyntaxError(
        file,
        n,
        REFUSAL.get(lower) ?? { zh: `${name} 由服务设置，不能更改`, en: `${name} is set by the service and cannot be changed` },
      )
    }
    // a file's stored encoding (ruleEncoding): one the browsers decode, never a list or a transfer's
    if (lower === 'content-encoding' && !/^(gzip|br)$/i.test(value)) {
      throw new RuleSyntaxError(file, n, {
        zh: `Content-Encoding 只能是 gzip 或 br（文件存储的压缩格式），实际为 "${value}"`,
        en: `Content-Encoding names how the files are stored compressed: gzip or br, not "${value}"`,
      })
    }
    if (!VALUE_RE.test(value)) {
      const what: Text = /[\u0000-\u001f\u007f]/.test(value)
        ? { zh: '控制字符', en: 'control characters' }
        : { zh: 'ASCII 以外的字符（请先百分号编码）', en: 'characters outside ASCII (percent-encode them)' }
      throw new RuleSyntaxError(file, n, { zh: `${name} 的值包含${what.zh}`, en: `the value of ${name} contains ${what.en}` })
    }
    const inHost = hostPlaceholder(value, (p) => captured.includes(p))
    if (inHost !== null) {
      throw new RuleSyntaxError(file, n, {
        zh: `${name} 的值把 ${inHost} 放在了 URL 的主机部分：访客提供的值不能决定页面把访客送往哪个站点；请把占位符放在路径中`,
        en: `the value of ${name} puts ${inHost} in the host of a URL: a visitor's value cannot choose the site a page sends them to; put placeholders in the path`,
      })
    }
    current.headers.push([name, value])
  }
  if (current && isEmpty(current)) throw new RuleSyntaxError(file, current.line, noHeaders(current.pattern))
  return rules
}

/** A `_headers` block with neither a header nor a `! Name` line under its pattern. */
const isEmpty = (rule: HeaderRule): boolean => rule.headers.length === 0 && rule.unset === undefined

interface Compiled {
  re: RegExp
  names: string[]
}

/**
 * A line's pattern (hostOf) compiled: its path, and its host as a request's host name is
 * matched with it, `:name` taking one label (labels are [a-z0-9-], nothing to escape).
 */
function compileLine(written: string): Compiled & { hostRe?: RegExp } {
  const { host, path } = hostOf(written)
  if (host === undefined) return compile(path)
  const labels = host.split('.').map((label) => (label.startsWith(':') ? '[^.]+' : label))
  return { ...compile(path), hostRe: new RegExp(`^${labels.join('\\.')}$`) }
}

/** Whether a compiled line applies on `host` (a request's host name; '' where the site sits under a path). */
const onHost = (r: { hostRe?: RegExp }, host: string): boolean => r.hostRe === undefined || (host !== '' && r.hostRe.test(host))

/**
 * A rule's own path text as the request paths it is compared with read: each segment
 * percent-decoded once (Netlify's files write `/c%C3%A9line` and `/my%20page`), one that is
 * malformed or would hide a separator (`%2F`) left as written, and NFC.
 */
const decodeText = (t: string): string =>
  (t.includes('%')
    ? t
        .split('/')
        .map((seg) => decodeSegment(seg) ?? seg)
        .join('/')
    : t
  ).normalize('NFC')

/**
 * Compiles a pattern, matched against a decoded NFC path: `:name` takes one segment, a final
 * `*` the rest, an inner `*` (`_headers` only) any characters, slashes included, captured as
 * `:splat`; a trailing slash is optional; the other text is decoded (decodeText).
 */
function compile(pattern: string): Compiled {
  const names: string[] = []
  let body = pattern
  const splat = body.endsWith('*')
  if (splat) body = body.slice(0, -1)
  // "/docs/*" also matches "/docs": the splat then captures nothing
  const dirSplat = splat && body.endsWith('/')
  if (dirSplat) body = body.slice(0, -1)
  const literal = (t: string) => decodeText(t).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  let re = body
    .split('/')
    .map((seg) => {
      if (seg.startsWith(':')) {
        names.push(seg.slice(1))
        return '([^/]+)'
      }
      if (!seg.includes('*')) return literal(seg)
      names.push('splat')
      return seg.split('*').map(literal).join('(.*)')
    })
    .join('/')
  if (splat) {
    names.push('splat')
    re += dirSplat ? '(?:/(.*))?' : '(.*)'
  } else if (re.length > 1 && re.endsWith('/')) {
    re = `${re.slice(0, -1)}/?`
  } else if (re.length > 1) {
    re += '/?'
  }
  return { re: new RegExp(`^${re}$`), names }
}

/** The answer a redirect rule gives for a path. */
export interface RuleMatch {
  status: RuleStatus
  /**
   * The target's path (or, for an external target, its URL) before any query or fragment,
   * decoded as a request path is (its own text as decodeText reads it, placeholders filled
   * with their decoded values): the file a 200, 404 or 410 answers with.
   */
  to: string
  /**
   * The whole target as a Location value: the rule's own text percent-encoded as `encodeURI`
   * does (a `%XX` already there is kept), each placeholder's value encoded whole (in the path, all but its slashes), so a
   * value's `?`, `#`, `%` or space never changes where the URL points.
   */
  href: string
  force: boolean
  /**
   * The query parameters the rule's query matches took (present only for a rule that has
   * some): a redirect passes the request's other parameters on, not these.
   */
  consumed?: string[]
}

/** The compiled rules of one project, ready to match request paths (relative to the project, starting with /, decoded, NFC). */
export interface SiteRules {
  redirects: Array<RedirectRule & Compiled & { hostRe?: RegExp }>
  headers: Array<HeaderRule & Compiled & { hostRe?: RegExp }>
  /** Indexes of the redirects with a plain path (no placeholder, splat, query or host), by literalKey of that path, in file order. */
  literal: Map<string, number[]>
  /** The other redirects (placeholders, splats, queries, hosts), by their path's segments. */
  dynamic: SegmentIndex
  /** The `_headers` blocks by their path's segments. */
  headerIndex: SegmentIndex
}

/**
 * Lines filed by the segments of their path pattern, so a request path meets only the lines it
 * may match (a superset: each line's regex still decides), not every line of the file: a
 * literal segment by its decoded text, `:name` as any one non-empty segment, a segment with `*`
 * as anything from there on. A site's thousands of placeholder lines then cost a path a walk of
 * its own segments, not a regex per line.
 */
interface SegmentIndex {
  lit: Map<string, SegmentIndex>
  param: SegmentIndex | null
  /** Lines with a `*` in the next segment: every path reaching this node, whatever follows. */
  rest: number[]
  /** Lines whose pattern ends here (a trailing slash is optional, as in compile). */
  end: number[]
}

const segmentNode = (): SegmentIndex => ({ lit: new Map(), param: null, rest: [], end: [] })

/** A path's segments as the index reads them: no leading slash, one trailing slash dropped. */
function segmentsOf(path: string): string[] {
  const p = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path
  return p === '/' || p === '' ? [] : p.slice(1).split('/')
}

/** The index of `paths` (a line's path pattern, or null: a line found otherwise), by line number in the list. */
function indexSegments(paths: Array<string | null>): SegmentIndex {
  const root = segmentNode()
  paths.forEach((path, i) => {
    if (path === null) return
    let node = root
    for (const seg of segmentsOf(path)) {
      if (seg.includes('*')) {
        node.rest.push(i)
        return
      }
      if (seg.startsWith(':')) {
        node = node.param ??= segmentNode()
        continue
      }
      const key = decodeText(seg)
      let next = node.lit.get(key)
      if (next === undefined) node.lit.set(key, (next = segmentNode()))
      node = next
    }
    node.end.push(i)
  })
  return root
}

/** The lines of `index` that a decoded request path may match, in file order. */
export function candidates(index: SegmentIndex, path: string): number[] {
  const segs = segmentsOf(path)
  const out: number[] = []
  const walk = (node: SegmentIndex, i: number): void => {
    for (const n of node.rest) out.push(n)
    if (i === segs.length) {
      for (const n of node.end) out.push(n)
      return
    }
    const next = node.lit.get(segs[i])
    if (next !== undefined) walk(next, i + 1)
    if (node.param !== null && segs[i] !== '') walk(node.param, i + 1)
  }
  walk(index, 0)
  return out.sort((a, b) => a - b)
}

/** The key of a decoded path among plain lines: a line's pattern matches its path with or without a final slash. */
const literalKey = (path: string): string => (path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path)

/** Files the compiled redirects by whether a request's path alone can find them (SiteRules.literal). */
function indexRedirects(redirects: SiteRules['redirects']): Pick<SiteRules, 'literal' | 'dynamic'> {
  const literal = new Map<string, number[]>()
  const dynamic = indexSegments(redirects.map((r) => (r.re === PLAIN ? null : hostOf(r.from).path)))
  redirects.forEach((r, i) => {
    if (r.re !== PLAIN) return
    const key = literalKey(decodeText(r.from))
    const list = literal.get(key)
    if (list) list.push(i)
    else literal.set(key, [i])
  })
  return { literal, dynamic }
}

/** The `re` of a plain line, never run: such a line is found by its path (SiteRules.literal). */
const PLAIN = /$^/

/** A redirect compiled: a plain line (no placeholder, splat, query or host) takes no regex of its own. */
function compileRedirect(r: RedirectRule): SiteRules['redirects'][number] {
  const plain = r.query === undefined && !/^https?:\/\//i.test(r.from) && !r.from.includes('*') && !r.from.split('/').some((seg) => seg.startsWith(':'))
  return plain ? { ...r, re: PLAIN, names: [] } : { ...r, ...compileLine(r.from) }
}

/** Two ascending lists of indexes as one. */
function merged(a: number[], b: number[]): number[] {
  const out: number[] = []
  let i = 0
  let j = 0
  while (i < a.length || j < b.length) out.push(j >= b.length || (i < a.length && a[i] < b[j]) ? a[i++] : b[j++])
  return out
}

/**
 * Compiles a project's stored rules. A header value or name this release refuses is left out:
 * rules published before a check was added never reach an answer (a value Node cannot send
 * would fail every request the rule matches).
 */
export function compileRules(redirects: RedirectRule[], headers: HeaderRule[]): SiteRules {
  const allowed = ([name, value]: [string, string]) => !FORBIDDEN_HEADERS.has(name.toLowerCase()) && VALUE_RE.test(value)
  // every placeholder of a stored target was checked as captured at its publish
  const compiled = redirects.filter((r) => hostPlaceholder(ownHost(r.to), () => true) === null).map(compileRedirect)
  return {
    redirects: compiled,
    ...indexRedirects(compiled),
    headers: headers.map((h) => {
      const c = compileLine(h.pattern)
      const safe = ([, value]: [string, string]) => hostPlaceholder(value, (name) => c.names.includes(name)) === null
      return { ...h, headers: h.headers.filter((nv) => allowed(nv) && safe(nv)), ...c }
    }),
    headerIndex: indexSegments(headers.map((h) => hostOf(h.pattern).path)),
  }
}

/**
 * The first redirect rule matching `path` and `query` (the request's, with or without its
 * `?`) on `host` (onHost). With `fileExists`, only forced rules apply (a file at the path
 * shadows the others, as on Netlify).
 */
export function matchRedirect(rules: SiteRules, path: string, fileExists: boolean, query = '', host = ''): RuleMatch | null {
  let params: URLSearchParams | undefined
  // the plain lines of this path, found by it, among the others in file order: first match wins
  const plain = rules.literal.get(literalKey(path))
  const dynamic = candidates(rules.dynamic, path)
  for (const i of plain ? merged(plain, dynamic) : dynamic) {
    const r = rules.redirects[i]
    if ((fileExists && !r.force) || !onHost(r, host)) continue
    const m = r.re === PLAIN ? [path] : r.re.exec(path)
    if (!m) continue
    const values = new Map<string, string>()
    r.names.forEach((name, i) => values.set(name, m[i + 1] ?? ''))
    if (r.query !== undefined && !queryMatches(r.query, (params ??= new URLSearchParams(query)), values)) continue
    const cut = r.to.search(/[?#]/)
    const [pathPart, rest] = cut < 0 ? [r.to, ''] : [r.to.slice(0, cut), r.to.slice(cut)]
    const to = fill(pathPart, values, (v) => v, decodeText)
    const href = fill(pathPart, values, encodePath, encodeText)
    // a target on this site is a path of the project: its dot segments (written in the rule or
    // brought by a value) are resolved there, never above its root
    const external = EXTERNAL.test(r.to)
    return {
      status: r.status,
      to: external ? to : removeDots(to, (seg) => seg),
      href: (external ? href : removeDots(href, (seg) => seg.replace(/%2e/gi, '.'))) + fill(rest, values, encodeURIComponent, encodeText),
      force: r.force,
      ...(r.query !== undefined ? { consumed: r.query.map((q) => q.name) } : {}),
    }
  }
  return null
}

/**
 * Whether a request's query has every parameter a rule asks for (its first value: a literal's
 * exactly, a placeholder's non-empty, as a path placeholder takes a non-empty segment);
 * binds the placeholders' values into `values`.
 */
function queryMatches(query: QueryMatch[], params: URLSearchParams, values: Map<string, string>): boolean {
  for (const q of query) {
    const v = params.get(q.name)
    if (v === null) return false
    if ('equals' in q) {
      if (v !== q.equals) return false
    } else if (v === '') return false
    else values.set(q.bind, v)
  }
  return true
}

/** The query parameters any query-matching rule that matches `path` asks for, sorted: what its answer depends on besides the path. */
export function queryNamesFor(rules: SiteRules, path: string, host = ''): string[] {
  const names = new Set<string>()
  for (const i of candidates(rules.dynamic, path)) {
    const r = rules.redirects[i]
    if (r.query !== undefined && onHost(r, host) && r.re.test(path)) for (const q of r.query) names.add(q.name)
  }
  return [...names].sort()
}

/**
 * The extra headers of every `_headers` rule matching `path`, in file order; a repeated name is
 * joined with ", ", unless a later block detached it (`! Name`, dropped before its own lines).
 * A value's `:name` that its pattern captures (`:splat` for a final `*`) is replaced by what it
 * matched, as Cloudflare Pages does, percent-encoded (slashes kept), so a value stays visible
 * ASCII whatever the path holds (a decoded CR LF never splits a header).
 */
export function headersFor(rules: SiteRules, path: string, host = ''): Array<[string, string]> {
  const out = new Map<string, [string, string]>()
  for (const i of candidates(rules.headerIndex, path)) {
    const h = rules.headers[i]
    const m = onHost(h, host) ? h.re.exec(path) : null
    if (!m) continue
    for (const name of h.unset ?? []) out.delete(name.toLowerCase())
    const values = new Map<string, string>()
    h.names.forEach((name, i) => values.set(name, m[i + 1] ?? ''))
    for (const [name, raw] of h.headers) {
      const value = values.size === 0 || !raw.includes(':') ? raw : fill(raw, values, encodePath, (t) => t)
      const k = name.toLowerCase()
      const prev = out.get(k)
      out.set(k, prev ? [prev[0], `${prev[1]}, ${value}`] : [name, value])
    }
  }
  return [...out.values()]
}

const PLACEHOLDER = /:([A-Za-z_][A-Za-z0-9_]*)/g
const EXTERNAL = /^https?:\/\//i

/** Where a URL names its host: after `//` or `http(s):`, up to a / ? # or what ends a URL in a header value. */
const HOST_PART = /(?:\/\/|\bhttps?:)[^/?#\s,;<>"']*/gi

/**
 * The first placeholder that `captured` fills which `text` puts where a URL names its user,
 * host or port (`https://:splat/`, `https://example.com:splat`, `https::splat`), or null. A
 * value filled there would choose the host a visitor is sent to; in a path it cannot, so only
 * there may a value go (decision 149). A port's digits are no placeholder.
 */
function hostPlaceholder(text: string, captured: (name: string) => boolean): string | null {
  for (const host of text.matchAll(HOST_PART)) for (const p of host[0].matchAll(PLACEHOLDER)) if (captured(p[1])) return p[0]
  return null
}

/**
 * The scheme and authority of a redirect's target on another site ('' for one on this site):
 * where it sends the visitor. A URL in its query (`?next=https://...`) is a value for that site.
 */
const ownHost = (to: string): string => /^https?:\/\/[^/?#]*/i.exec(to)?.[0] ?? ''

/**
 * An absolute path with its `.` and `..` segments resolved as a browser resolves a URL's
 * (RFC 3986 remove_dot_segments): `..` at the root stays at the root, so the result is always
 * under `/`. `plain` gives a segment as compared with `.` and `..` (a URL's `%2e` is a dot).
 */
export function removeDots(path: string, plain: (seg: string) => string): string {
  const segs = path.split('/')
  if (!segs.some((seg) => plain(seg) === '.' || plain(seg) === '..')) return path
  const out: string[] = []
  for (let i = 1; i < segs.length; i++) {
    const seg = plain(segs[i])
    const last = i === segs.length - 1
    if (seg === '..') out.pop()
    if (seg !== '.' && seg !== '..') out.push(segs[i])
    else if (last) out.push('')
  }
  return `/${out.join('/')}`
}

/** A rule's target text with its placeholders replaced: values through `value`, the text around them through `text`. */
function fill(template: string, values: Map<string, string>, value: (v: string) => string, text: (t: string) => string): string {
  let out = ''
  let at = 0
  for (const m of template.matchAll(PLACEHOLDER)) {
    const v = values.get(m[1])
    if (v === undefined) continue
    out += text(template.slice(at, m.index)) + value(v)
    at = m.index + m[0].length
  }
  return out + text(template.slice(at))
}

/** A decoded path as URL text: every character of each segment encoded but the slashes between them. */
const encodePath = (v: string): string => v.split('/').map(encodeURIComponent).join('/')

/** A rule's own target text as URL text: encodeURI, keeping the %XX sequences it already has. */
const encodeText = (t: string): string => encodeURI(t).replace(/%25([0-9A-Fa-f]{2})/g, '%$1')

/**
 * A redirect's Location with the request's query (`?...` or '') passed on, as Netlify does:
 * joined to a query the target has with `&`, and placed before the target's fragment. The
 * parameters named in `drop` (those a rule's query matches took) are left out; the others
 * keep their text as sent.
 */
export function withQuery(location: string, query: string, drop?: readonly string[]): string {
  if (drop !== undefined && drop.length > 0 && query.length > 1) query = withoutParams(query, drop)
  if (query.length <= 1) return location
  const hash = location.indexOf('#')
  const [url, fragment] = hash < 0 ? [location, ''] : [location.slice(0, hash), location.slice(hash)]
  return url + (url.includes('?') ? `&${query.slice(1)}` : query) + fragment
}

/** A query (`?...`) without the parameters named in `names` (compared form-decoded); '' when none is left. */
function withoutParams(query: string, names: readonly string[]): string {
  const kept = query
    .slice(1)
    .split('&')
    .filter((pair) => {
      if (pair === '') return false
      const [[name] = ['']] = new URLSearchParams(pair)
      return !names.includes(name)
    })
  return kept.length > 0 ? `?${kept.join('&')}` : ''
}

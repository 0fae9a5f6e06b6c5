import { isUtf8 } from 'node:buffer'
import fs from 'node:fs'
import fsp from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import crypto from 'node:crypto'
import ignore, { type Ignore } from 'ignore'
import { checkRelativePath } from '../../features/sites/paths.js'
import { CliError } from './errors.js'

/** A local file to deploy. `path` is its path in the project: relative, '/'-separated, NFC. */
export interface LocalFile {
  path: string
  abs: string
  size: number
  sha256: string
}

/** A file the walk found but cannot deploy (odd name, unreadable, ...). */
export interface SkippedFile {
  path: string
  reason: string
}

export interface WalkOptions {
  /** Upload dotfiles and dot-directories too (`.git`, folder or file, never). */
  dotfiles?: boolean
  /** Warnings (symlinks leaving the folder, special files). */
  warn?: (message: string) => void
  /** The files go as multipart parts (batch uploads), whose file names cannot carry a double quote. */
  multipart?: boolean
}

/** A walked file: its stat's identity too, which the hash cache compares. */
export type WalkedFile = Omit<LocalFile, 'sha256'> & { mtimeMs: number; ctimeMs: number; ino: number }

export interface WalkResult {
  files: WalkedFile[]
  invalid: SkippedFile[]
  ignoredCount: number
  /** Folders the built-in rules left out (`node_modules/`, `__MACOSX/`), no rule of the user's; paths with a final '/'. */
  leftOut: string[]
  /** When the walk began, before its first stat (the hash cache's racy-file cutoff). */
  startedAt: number
}

const IGNORE_FILES = ['.gitignore', '.svcignore']
/**
 * Without --dotfiles: dotfiles and dot-directories stay out, except `.well-known/` (a site's
 * security.txt, app links, domain proofs), as Netlify's CLI deploys it; the folder's own
 * ignore files come after these rules and may still leave it out.
 */
const DOT_RULES = ['.*', '!.well-known/']

/**
 * Folders that are never part of a site, left out whatever the flags, as Netlify's CLI leaves
 * them from a repository's folder and Cloudflare's, Firebase's and Vercel's everywhere: installed
 * npm packages, and the resource forks of a zip made on a Mac. They come before the folder's
 * own rules, so a `!node_modules/` line in `.svcignore` deploys one; each one left out that no
 * rule of the user's names is listed (WalkResult.leftOut), for the CLI to say so.
 */
const BUILTIN_RULES = ['node_modules/', '__MACOSX/']
const BUILTIN_NAMES = new Set(['node_modules', '__MACOSX'])

/**
 * Names the server could not take as a path, or that the multipart filename cannot carry
 * unchanged (`multipart`: a double quote, which a tar entry carries as it is): control
 * characters, backslashes, double quotes, %XX sequences.
 */
export function badNameReason(name: string, multipart = true): string | null {
  if (/[\u0000-\u001f\u007f]/.test(name)) return 'the name contains a control character'
  if (name.includes('\\')) return 'the name contains a backslash'
  if (multipart && name.includes('"')) return 'the name contains a double quote'
  // the server refuses these too (a URL of such a name would read as its decoded form)
  if (/%[0-9A-Fa-f]{2}/.test(name)) return 'the name contains a %XX sequence; rename the file'
  return null
}

/**
 * Why the server would refuse a path (its own rule, checkRelativePath: depth, length, format
 * characters, look-alikes of separators), or null. Checked on every walked name, so such a file
 * is reported as the names above are, and the rest of the folder still goes.
 */
function serverPathReason(relPath: string): string | null {
  const r = checkRelativePath(relPath)
  return r.ok ? null : `the server refuses this path (${r.reason.en}); rename or move it`
}

/** A name whose bytes are not UTF-8: the server's paths are UTF-8, and the decoded name (U+FFFD for the bad bytes) opens nothing. */
const NOT_UTF8 = 'the name is not valid UTF-8; rename the file'

/** A name quoted with its non-ASCII characters as \\u escapes: two forms of one name look different. */
const escapedName = (name: string): string => JSON.stringify(name).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)

interface Matcher {
  /** Directory of the rules, relative to the root, '' or ending in '/'. */
  base: string
  ig: Ignore
  /**
   * The root's: its ignore files' rules alone (null: it has none), without the built-in ones
   * `ig` starts with, to tell a folder the user's own rules leave out from one only those do.
   */
  user?: Ignore | null
}

/**
 * Rules of one directory: `extra` (the root's built-in rules), then its .gitignore, then its
 * .svcignore (later rules win). One rule list, so a `!node_modules/` line brings back what the
 * folder holds as well as the folder.
 */
function matcherFor(dirAbs: string, base: string, extra: string[]): Matcher | null {
  const ig = ignore({ allowRelativePaths: true })
  const user = ignore({ allowRelativePaths: true })
  let own = false
  if (extra.length) ig.add(extra)
  for (const f of IGNORE_FILES) {
    let text: string
    try {
      text = fs.readFileSync(path.join(dirAbs, f), 'utf8')
    } catch {
      continue
    }
    ig.add(text)
    user.add(text)
    own = true
  }
  if (extra.length) return { base, ig, user: own ? user : null }
  return own ? { base, ig } : null
}

/**
 * Whether `rel` (relative to the root; directories with a trailing '/') is ignored: the
 * matchers of its ancestors apply from the root down, the deepest one that says something wins
 * (git's nested .gitignore semantics).
 */
function isIgnored(matchers: Matcher[], rel: string, userOnly = false): boolean {
  let ignored = false
  for (const m of matchers) {
    if (!rel.startsWith(m.base)) continue
    const ig = userOnly && m.user !== undefined ? m.user : m.ig
    if (ig === null) continue
    const r = ig.test(rel.slice(m.base.length))
    if (r.ignored) ignored = true
    else if (r.unignored) ignored = false
  }
  return ignored
}

/**
 * The refusal of a folder with no file to deploy. When the walk left entries out, it says which
 * rules did and how to keep dotfiles: a folder of dotfiles alone has files, just none sent.
 */
export function nothingToDeploy(dir: string, ignoredCount: number): string {
  if (ignoredCount === 0) return `nothing to deploy: ${dir} has no files`
  const n = `${ignoredCount} file${ignoredCount === 1 ? '' : 's'} or folder${ignoredCount === 1 ? '' : 's'}`
  return `nothing to deploy: every file of ${dir} is left out (${n}): .git/, dotfiles (--dotfiles deploys them), node_modules/ and what .gitignore and .svcignore name`
}

/**
 * The line saying which folders the built-in rules left out (WalkResult.leftOut), and how to
 * deploy one; null when none was.
 */
export function leftOutNote(leftOut: readonly string[]): string | null {
  if (leftOut.length === 0) return null
  const shown = leftOut.slice(0, 5).join(', ') + (leftOut.length > 5 ? ` and ${leftOut.length - 5} more` : '')
  return `note: left out ${shown}: installed packages and a Mac zip's __MACOSX/ stay local unless .svcignore says otherwise (a line !node_modules/ there deploys node_modules/)`
}

/**
 * Lists the files of `root` to deploy. Honours .gitignore and .svcignore in the folder and
 * its subfolders (files above `root` are not read: a repository's `.gitignore` often lists the
 * build folder being deployed). Dotfiles and dot-directories other than `.well-known/` are
 * left out unless `dotfiles` (a `!.name/` rule also brings one back); `.git`, a folder or a
 * worktree's or submodule's file, is never uploaded; nor are the BUILTIN_RULES folders unless a
 * rule brings them back. Symbolic links are followed only when they point inside the folder.
 */
export async function walkFolder(root: string, opts: WalkOptions = {}): Promise<WalkResult> {
  const warn = opts.warn ?? (() => {})
  const startedAt = Date.now()
  let rootReal: string
  try {
    rootReal = await fsp.realpath(root)
    if (!(await fsp.stat(rootReal)).isDirectory()) throw new CliError(`${root} is not a folder`)
  } catch (e) {
    if (e instanceof CliError) throw e
    throw new CliError(`cannot read folder ${root}: ${(e as Error).message}`)
  }
  const files: WalkResult['files'] = []
  const invalid: SkippedFile[] = []
  const seen = new Map<string, string>()
  // real paths of symbolic links' targets as latin1, one char per byte: exact even when not UTF-8
  const rootKey = Buffer.from(rootReal).toString('latin1')
  const visited = new Set<string>([rootKey])
  let ignoredCount = 0
  const leftOut: string[] = []

  const inside = (real: string) => real === rootKey || real.startsWith(rootKey + path.sep)

  // `dirKey`: the folder's real path (latin1, as rootKey); `chain`: those of the folders above
  // it and itself, so a link back to one of them (a loop) is told from a link to another folder
  const walk = async (dirAbs: string, rel: string, matchers: Matcher[], dirKey: string, chain: Set<string>): Promise<void> => {
    const own = matcherFor(dirAbs, rel, rel === '' ? [...BUILTIN_RULES, ...(opts.dotfiles ? [] : DOT_RULES)] : [])
    const ms = own ? [...matchers, own] : matchers
    // Names come as bytes: as strings, bytes that are not UTF-8 would read as U+FFFD and the
    // name would open nothing. Invariant: `abs` is exact only when `utf8`; any other name is
    // reported (or ignored) before `abs` is used, and only `bytes`, its exact path, is opened.
    // `name` is the decoded form that ignore rules and reports see (an ignore file is decoded
    // the same way, so a rule holding those bytes matches).
    let dirents: fs.Dirent<Buffer>[]
    try {
      dirents = await fsp.readdir(dirAbs, { withFileTypes: true, encoding: 'buffer' })
    } catch (e) {
      invalid.push({ path: rel || '.', reason: `cannot read folder: ${(e as Error).message}` })
      return
    }
    const entries = dirents.map((ent) => ({ ent, utf8: isUtf8(ent.name), decoded: ent.name.toString('utf8') }))
    entries.sort((a, b) => (a.decoded < b.decoded ? -1 : a.decoded > b.decoded ? 1 : 0))
    for (const { ent, utf8, decoded } of entries) {
      const abs = path.join(dirAbs, decoded)
      const bytes = utf8 ? abs : Buffer.concat([Buffer.from(dirAbs + path.sep), ent.name])
      const name = decoded.normalize('NFC')
      let isDir = ent.isDirectory()
      let isFile = ent.isFile()
      let childKey = `${dirKey}${path.sep}${ent.name.toString('latin1')}`
      if (ent.isSymbolicLink()) {
        let real: string
        try {
          real = (await fsp.realpath(bytes, { encoding: 'buffer' })).toString('latin1')
        } catch (e) {
          // links that point at each other (a -> b -> a) never reach a file: not "broken"
          const loop = (e as NodeJS.ErrnoException).code === 'ELOOP'
          warn(`skipping ${rel}${name}: ${loop ? 'symbolic links that point at each other (a loop)' : 'broken symbolic link'}`)
          continue
        }
        if (!inside(real)) {
          warn(`skipping ${rel}${name}: symbolic link to outside the folder`)
          continue
        }
        let st: fs.Stats
        try {
          st = await fsp.stat(bytes)
        } catch (e) {
          invalid.push({ path: `${rel}${name}`, reason: changedReason(e) })
          continue
        }
        isDir = st.isDirectory()
        isFile = st.isFile()
        // a link to a folder it is in would copy that folder into itself once more: left out as
        // the loop it is (a link to another folder of the site is deployed as a copy)
        if (isDir && chain.has(real)) {
          if (!isIgnored(ms, `${rel}${name}/`)) warn(`skipping ${rel}${name}: symbolic link to a folder that contains it (a loop)`)
          continue
        }
        if (isDir && visited.has(real)) continue
        childKey = real
        if (isDir) visited.add(real)
      }
      // git's own entry, whatever its kind: the repository folder, or the file a worktree or a
      // submodule has in its place (`gitdir: /home/me/src/...`, the owner's own paths)
      if (name.toLowerCase() === '.git') {
        ignoredCount++
        continue
      }
      const relPath = `${rel}${name}`
      if (isDir) {
        if (isIgnored(ms, `${relPath}/`)) {
          ignoredCount++
          // left out by a built-in rule alone: said, since no rule of the user's names it
          if (BUILTIN_NAMES.has(name) && !isIgnored(ms, `${relPath}/`, true)) leftOut.push(`${relPath}/`)
          continue
        }
        const bad = utf8 ? (badNameReason(name, opts.multipart !== false) ?? serverPathReason(relPath)) : NOT_UTF8
        if (bad) {
          invalid.push({ path: `${relPath}/`, reason: bad })
          continue
        }
        await walk(abs, `${relPath}/`, ms, childKey, new Set(chain).add(childKey))
        continue
      }
      if (!isFile) {
        if (!isIgnored(ms, relPath)) warn(`skipping ${relPath}: not a regular file`)
        continue
      }
      if (isIgnored(ms, relPath)) {
        ignoredCount++
        continue
      }
      const bad = utf8 ? (badNameReason(name, opts.multipart !== false) ?? serverPathReason(relPath)) : NOT_UTF8
      if (bad) {
        invalid.push({ path: relPath, reason: bad })
        continue
      }
      const prior = seen.get(relPath)
      const onDisk = `${rel}${decoded}`
      if (prior !== undefined) {
        invalid.push({
          path: relPath,
          reason: `two local files have this name in Unicode NFC, ${escapedName(prior)} and ${escapedName(onDisk)} (the same letters, composed and decomposed); keep one`,
        })
        continue
      }
      seen.set(relPath, onDisk)
      // synchronous: one stat per file, and a threadpool round trip costs more than the call
      let st: fs.Stats
      try {
        st = fs.statSync(bytes)
      } catch (e) {
        invalid.push({ path: relPath, reason: changedReason(e) })
        continue
      }
      files.push({ path: relPath, abs, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, ino: st.ino })
    }
  }
  await walk(rootReal, '', [], rootKey, new Set([rootKey]))
  return { files, invalid, ignoredCount, leftOut, startedAt }
}

/** Quoted strings of a page (attribute values, import maps, a script's imports) that name a path in a node_modules/ folder. */
const NODE_MODULES_REF = /["'`]([^"'`<>\s]*node_modules\/[^"'`<>\s]*)["'`]/g

/**
 * The files of folders the walk left out by the built-in rules that the folder's root pages
 * (index.html, 404.html) load or link to, as paths of the folder (`node_modules/alpinejs/dist/cdn.min.js`):
 * a site that loads its libraries straight from node_modules/ would go live without them.
 * Only names of files that exist count, resolved as the browser resolves them from the root page.
 */
export async function leftOutReferences(root: string, leftOut: readonly string[]): Promise<string[]> {
  if (leftOut.length === 0) return []
  const found: string[] = []
  for (const page of ['index.html', '404.html']) {
    let html: string
    try {
      html = (await fsp.readFile(path.join(root, page), 'utf8')).slice(0, 1 << 20)
    } catch {
      continue
    }
    for (const m of html.matchAll(NODE_MODULES_REF)) {
      let rel: string
      try {
        const u = new URL(m[1], 'http://site.invalid/')
        if (u.origin !== 'http://site.invalid') continue
        rel = decodeURIComponent(u.pathname).slice(1)
      } catch {
        continue
      }
      if (found.includes(rel) || !leftOut.some((d) => rel.startsWith(d))) continue
      const st = await fsp.stat(path.join(root, ...rel.split('/'))).catch(() => null)
      if (st?.isFile() === true) found.push(rel)
    }
  }
  return found
}

/**
 * Says on stderr which folders the built-in rules left out; refuses the deploy, before anything
 * is read or sent, when the site's root page loads files from one of them.
 */
export async function checkLeftOut(root: string, label: string, leftOut: readonly string[], note: (line: string) => void): Promise<void> {
  const line = leftOutNote(leftOut)
  if (line === null) return
  note(line)
  const refs = await leftOutReferences(root, leftOut)
  if (refs.length === 0) return
  const shown = refs.slice(0, 3).join(', ') + (refs.length > 3 ? ` and ${refs.length - 3} more` : '')
  throw new CliError(
    `${label}: its pages load ${shown}, in a folder that is left out, so the site would go live without ${refs.length === 1 ? 'it' : 'them'}. Add a line !node_modules/ to the .svcignore file at its root to deploy that folder too, or copy the files the site needs into it; nothing was sent`,
  )
}

/**
 * Why a file the walk listed cannot be read now: the deploy then fails naming it (decision
 * 114), in one wording for the walk, the hashing, the archive and the batches.
 */
export function changedReason(e: unknown): string {
  const code = (e as NodeJS.ErrnoException)?.code
  if (code === 'ENOENT' || code === 'ENOTDIR') return 'changed while deploying (it is gone); run svc deploy again'
  if (code === 'EISDIR') return 'changed while deploying (it is now a folder); run svc deploy again'
  return `cannot read: ${(e as Error).message}`
}

/** Files up to this size are read whole and synchronously (hashing, archiving); larger ones are streamed. */
export const SMALL_FILE = 1024 * 1024

/** SHA-256 of a file, hex; small files in one synchronous read, larger ones streamed. */
export async function hashFile(abs: string, size: number): Promise<string> {
  if (size <= SMALL_FILE) return crypto.createHash('sha256').update(fs.readFileSync(abs)).digest('hex')
  const h = crypto.createHash('sha256')
  for await (const chunk of fs.createReadStream(abs, { highWaterMark: 1024 * 1024 })) h.update(chunk as Buffer)
  return h.digest('hex')
}

/** Runs `fn` over `items` with at most `limit` at a time, keeping the order of results. */
export async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length)
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const i = next++
      out[i] = await fn(items[i], i)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  return out
}

/**
 * The hashes of a folder's last deploy, to skip reading files that did not change (as git's
 * index does): one JSON file per folder under the cache dir. An entry is used only when the
 * file's size, mtime, ctime and inode are those recorded, and the file was last changed at
 * least RACY_MS before the walk that recorded it began: a change within the same timestamp
 * tick as that walk could leave the times equal with other bytes, so such files are hashed
 * again. Any unreadable or malformed cache is ignored.
 */
interface HashCache {
  v: 1
  /** WalkResult.startedAt of the run that wrote it. */
  at: number
  files: Record<string, [size: number, mtimeMs: number, ctimeMs: number, ino: number, sha256: string]>
}
const RACY_MS = 3000
/** Cache files kept: the most recently used folders. */
const CACHE_KEEP = 50

/** The hash cache's folder: SVC_CACHE_DIR, else $XDG_CACHE_HOME/svc, else ~/.cache/svc. */
export function hashCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.SVC_CACHE_DIR) return path.resolve(env.SVC_CACHE_DIR)
  const base = env.XDG_CACHE_HOME && path.isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : path.join(os.homedir(), '.cache')
  return path.join(base, 'svc')
}

const cacheFileOf = (dir: string, folder: string) =>
  path.join(dir, 'deploy-hashes', `${crypto.createHash('sha256').update(folder).digest('hex').slice(0, 32)}.json`)

function readCache(file: string): HashCache | null {
  try {
    const c = JSON.parse(fs.readFileSync(file, 'utf8')) as HashCache
    return c && c.v === 1 && typeof c.at === 'number' && c.files && typeof c.files === 'object' ? c : null
  } catch {
    return null
  }
}

/** Best effort: a cache that cannot be written only costs the next deploy its reads. */
function writeCache(file: string, cache: HashCache): void {
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 })
    const tmp = `${file}.${process.pid}.tmp`
    fs.writeFileSync(tmp, JSON.stringify(cache), { mode: 0o600 })
    fs.renameSync(tmp, file)
    const all = fs
      .readdirSync(path.dirname(file))
      .filter((n) => n.endsWith('.json'))
      .map((n) => path.join(path.dirname(file), n))
    if (all.length > CACHE_KEEP) {
      const byAge = all.map((f) => ({ f, t: fs.statSync(f).mtimeMs })).sort((a, b) => a.t - b.t)
      for (const { f } of byAge.slice(0, all.length - CACHE_KEEP)) fs.rmSync(f, { force: true })
    }
  } catch {
    // ignored
  }
}

/**
 * Hashes every file (a few at a time), reporting progress; unreadable files are reported.
 * With `cache` (the walked folder and the walk's start), unchanged files are not read again.
 */
export async function hashFiles(
  files: WalkedFile[],
  onProgress?: (done: number) => void,
  cache?: { dir: string; folder: string; startedAt: number },
): Promise<{ files: LocalFile[]; unreadable: SkippedFile[] }> {
  let done = 0
  const unreadable: SkippedFile[] = []
  const file = cache ? cacheFileOf(cache.dir, cache.folder) : null
  const old = file ? readCache(file) : null
  const known = (f: WalkedFile): string | null => {
    const e = old ? old.files[f.path] : undefined
    if (!old || !Array.isArray(e) || e.length !== 5) return null
    const [size, mtimeMs, ctimeMs, ino, sha256] = e
    if (size !== f.size || mtimeMs !== f.mtimeMs || ctimeMs !== f.ctimeMs || ino !== f.ino) return null
    if (Math.max(f.mtimeMs, f.ctimeMs) >= old.at - RACY_MS) return null
    return typeof sha256 === 'string' && /^[0-9a-f]{64}$/.test(sha256) ? sha256 : null
  }
  const out = await mapLimit(files, 4, async (f) => {
    let sha256: string | null = known(f)
    if (sha256 === null) {
      try {
        sha256 = await hashFile(f.abs, f.size)
      } catch (e) {
        unreadable.push({ path: f.path, reason: changedReason(e) })
      }
    }
    onProgress?.(++done)
    return sha256 === null ? null : { path: f.path, abs: f.abs, size: f.size, sha256, stat: f }
  })
  const hashed = out.filter((f) => f !== null)
  if (file && cache) {
    writeCache(file, {
      v: 1,
      at: cache.startedAt,
      files: Object.fromEntries(hashed.map((h) => [h.path, [h.size, h.stat.mtimeMs, h.stat.ctimeMs, h.stat.ino, h.sha256]])),
    })
  }
  return { files: hashed.map(({ path: p, abs, size, sha256 }) => ({ path: p, abs, size, sha256 })), unreadable }
}

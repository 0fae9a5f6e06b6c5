import fs from 'node:fs'
import fsp from 'node:fs/promises'
import path from 'node:path'
import crypto from 'node:crypto'
import ignore, { type Ignore } from 'ignore'
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
  /** Upload dotfiles and dot-directories too (`.git/` never). */
  dotfiles?: boolean
  /** Warnings (symlinks leaving the folder, special files). */
  warn?: (message: string) => void
}

export interface WalkResult {
  files: Array<Omit<LocalFile, 'sha256'>>
  invalid: SkippedFile[]
  ignoredCount: number
}

const IGNORE_FILES = ['.gitignore', '.svcignore']

/**
 * Names the server could not take as a path, or that the multipart filename cannot carry
 * unchanged: control characters, backslashes, double quotes.
 */
export function badNameReason(name: string): string | null {
  if (/[\u0000-\u001f\u007f]/.test(name)) return 'the name contains a control character'
  if (name.includes('\\')) return 'the name contains a backslash'
  if (name.includes('"')) return 'the name contains a double quote'
  return null
}

interface Matcher {
  /** Directory of the rules, relative to the root, '' or ending in '/'. */
  base: string
  ig: Ignore
}

/** Rules of one directory: its .gitignore, then its .svcignore (later rules win). */
function matcherFor(dirAbs: string, base: string, extra: string[]): Matcher | null {
  const ig = ignore({ allowRelativePaths: true })
  let any = extra.length > 0
  if (extra.length) ig.add(extra)
  for (const f of IGNORE_FILES) {
    let text: string
    try {
      text = fs.readFileSync(path.join(dirAbs, f), 'utf8')
    } catch {
      continue
    }
    ig.add(text)
    any = true
  }
  return any ? { base, ig } : null
}

/**
 * Whether `rel` (relative to the root; directories with a trailing '/') is ignored: the
 * matchers of its ancestors apply from the root down, the deepest one that says something wins
 * (git's nested .gitignore semantics).
 */
function isIgnored(matchers: Matcher[], rel: string): boolean {
  let ignored = false
  for (const m of matchers) {
    if (!rel.startsWith(m.base)) continue
    const r = m.ig.test(rel.slice(m.base.length))
    if (r.ignored) ignored = true
    else if (r.unignored) ignored = false
  }
  return ignored
}

/**
 * Lists the files of `root` to deploy. Honours .gitignore and .svcignore in the folder and
 * its subfolders (files above `root` are not read: a repository's `.gitignore` often lists the
 * build folder being deployed). Dotfiles and dot-directories are left out unless `dotfiles`
 * (a `!.well-known/` rule also brings one back); `.git/` is never uploaded. Symbolic links are
 * followed only when they point inside the folder.
 */
export async function walkFolder(root: string, opts: WalkOptions = {}): Promise<WalkResult> {
  const warn = opts.warn ?? (() => {})
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
  const visited = new Set<string>([rootReal])
  let ignoredCount = 0

  const inside = (real: string) => real === rootReal || real.startsWith(rootReal + path.sep)

  const walk = async (dirAbs: string, rel: string, matchers: Matcher[]): Promise<void> => {
    const own = matcherFor(dirAbs, rel, rel === '' && !opts.dotfiles ? ['.*'] : [])
    const ms = own ? [...matchers, own] : matchers
    let entries: fs.Dirent[]
    try {
      entries = await fsp.readdir(dirAbs, { withFileTypes: true })
    } catch (e) {
      invalid.push({ path: rel || '.', reason: `cannot read folder: ${(e as Error).message}` })
      return
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    for (const ent of entries) {
      const abs = path.join(dirAbs, ent.name)
      const name = ent.name.normalize('NFC')
      let isDir = ent.isDirectory()
      let isFile = ent.isFile()
      if (ent.isSymbolicLink()) {
        let real: string
        try {
          real = await fsp.realpath(abs)
        } catch {
          warn(`skipping ${rel}${name}: broken symbolic link`)
          continue
        }
        if (!inside(real)) {
          warn(`skipping ${rel}${name}: symbolic link to outside the folder`)
          continue
        }
        const st = await fsp.stat(real)
        isDir = st.isDirectory()
        isFile = st.isFile()
        if (isDir && visited.has(real)) continue
        if (isDir) visited.add(real)
      }
      if (name === '.git' && isDir) {
        ignoredCount++
        continue
      }
      const relPath = `${rel}${name}`
      if (isDir) {
        if (isIgnored(ms, `${relPath}/`)) {
          ignoredCount++
          continue
        }
        const bad = badNameReason(name)
        if (bad) {
          invalid.push({ path: `${relPath}/`, reason: bad })
          continue
        }
        await walk(abs, `${relPath}/`, ms)
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
      const bad = badNameReason(name)
      if (bad) {
        invalid.push({ path: relPath, reason: bad })
        continue
      }
      const prior = seen.get(relPath)
      if (prior !== undefined) {
        invalid.push({ path: relPath, reason: `two local files have this name after Unicode normalisation (${prior})` })
        continue
      }
      seen.set(relPath, abs)
      // synchronous: one stat per file, and a threadpool round trip costs more than the call
      const st = fs.statSync(abs)
      files.push({ path: relPath, abs, size: st.size })
    }
  }
  await walk(rootReal, '', [])
  return { files, invalid, ignoredCount }
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

/** Hashes every file (a few at a time), reporting progress; unreadable files are reported. */
export async function hashFiles(files: WalkResult['files'], onProgress?: (done: number) => void): Promise<{ files: LocalFile[]; unreadable: SkippedFile[] }> {
  let done = 0
  const unreadable: SkippedFile[] = []
  const out = await mapLimit(files, 4, async (f) => {
    let sha256: string | null = null
    try {
      sha256 = await hashFile(f.abs, f.size)
    } catch (e) {
      unreadable.push({ path: f.path, reason: `cannot read: ${(e as Error).message}` })
    }
    onProgress?.(++done)
    return sha256 === null ? null : { ...f, sha256 }
  })
  return { files: out.filter((f): f is LocalFile => f !== null), unreadable }
}

/**
 * A zip as a whole deploy (POST .../deploys with Content-Type application/zip, as Netlify's API
 * takes one): the body is spooled to a temporary file (a zip is read from its end), every entry
 * is checked by its central directory, then inflated once, into a staging file beside the
 * spooled zip, to learn its SHA-256, size and content, before any byte reaches the blob store.
 * The service then stores the files from the staging file (no second inflate) and commits the
 * deploy as an archive deploy does.
 */
import crypto from 'node:crypto'
import fs from 'node:fs'
import fsp from 'node:fs/promises'
import path from 'node:path'
import { Readable, Transform, Writable, type TransformCallback } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type yauzl from 'yauzl'
import { nextEntry, openZip, YAUZL_NAME_ERROR } from '../../util/zip-reader.js'
import { AppError } from '../../errors/app-error.js'
import type { Text } from '../../errors/render.js'
import { archiveTopFolder } from '../../util/archive-root.js'
import { entryPath, refuseType, ROOT_DIR } from './archive-entries.js'
import { PathTree } from './paths.js'
import { ContentWatcher } from './sniff.js'
import { sizeText } from '../../util/sizes.js'

export const ZIP_TYPES = ['application/zip', 'application/x-zip-compressed']

/** Folder of the data folder where zip bodies wait while they are read; older files are crash leftovers. */
const SPOOL_DIR = path.join('tmp', 'zip-deploys')
/** Suffix of the file beside a spooled zip that holds its files' inflated bytes (readZip). */
const STAGED = '.files'
/** Bytes of the staging file one read takes for the small files stored from it. */
const READ_AHEAD = 4 * 1024 * 1024
const STALE_MS = 24 * 3600 * 1000

/**
 * The largest zip body: the deploy's own limit, plus what a zip holds besides the files' data
 * (headers, names, central directory): 1/16 of it, and at least 1 MiB.
 */
export const zipBodyLimit = (deployMaxBytes: number): number => deployMaxBytes + Math.max(1024 * 1024, Math.floor(deployMaxBytes / 16))

/** The limits of one zip deploy (docs/limits.md). */
export interface ZipLimits {
  maxFiles: number
  maxEntries: number
  maxDeployBytes: number
  maxFileBytes: number
}

/** One file of the deploy: its path, what its one inflate learnt, and where its bytes are staged. */
export interface ZipFileEntry {
  path: string
  digest: string
  size: number
  utf8: boolean
  keyTokens: ReadonlySet<string>
  /** Where its bytes start in the staging file (for bytes met before under another path: theirs). */
  offset: number
}

/** A checked zip: its files, whose inflated bytes wait in a staging file until `close`. */
export interface ZipSite {
  files: ZipFileEntry[]
  /** A file's bytes, read whole from the staging file (for small files). */
  read(f: ZipFileEntry): Promise<Buffer>
  /** A file's bytes, streamed from the staging file. */
  open(f: ZipFileEntry): Readable
  /** Removes the staging file; the caller always calls it. */
  close(): Promise<void>
}

const tooLarge = (en: string, zh: string) => new AppError('MANIFEST_TOO_LARGE', { params: { detail: { en, zh } } })
const unreadable = (detail: Text) => new AppError('ARCHIVE_TRUNCATED', { params: { detail } })

/**
 * Writes `body` to a new file under `<dataDir>/tmp/zip-deploys` and returns its path; refuses
 * a body over `max` bytes (1328) as soon as it passes it, and a request cut short (1326). The
 * file is removed on any failure; the caller removes it after use. Files a crash left behind
 * (older than a day) are removed on the way.
 */
export async function spoolZip(body: Readable, dataDir: string, max: number): Promise<string> {
  const dir = path.join(dataDir, SPOOL_DIR)
  await fsp.mkdir(dir, { recursive: true })
  await sweepStale(dir)
  const file = path.join(dir, `${Date.now()}-${crypto.randomBytes(8).toString('hex')}.zip`)
  let total = 0
  const meter = new Transform({
    transform(chunk: Buffer, _enc, cb: TransformCallback) {
      total += chunk.length
      if (total > max) cb(tooLarge(`the zip is larger than ${sizeText(max).en}`, `zip 超过 ${sizeText(max).zh}`))
      else cb(null, chunk)
    },
  })
  // piped, not pipeline(): a refusal must not destroy the request, whose answer is still to come
  const ws = fs.createWriteStream(file, { flags: 'wx', mode: 0o600 })
  try {
    await new Promise<void>((resolve, reject) => {
      let settled = false
      // the request's errors are the client's (1326); the file's (a full disk) are the server's
      const cut = () => unreadable({ en: 'the request ended before the zip was complete', zh: '请求在 zip 完整之前就结束了' })
      const fail = (e: unknown) => {
        if (settled) return
        settled = true
        body.unpipe(meter)
        meter.destroy()
        ws.destroy()
        reject(e)
      }
      body.on('error', () => fail(cut()))
      body.on('close', () => {
        if (!body.readableEnded) fail(cut())
      })
      meter.on('error', fail)
      ws.on('error', fail)
      ws.on('close', () => {
        if (!settled && ws.writableFinished) {
          settled = true
          resolve()
        }
      })
      body.pipe(meter).pipe(ws)
    })
  } catch (e) {
    await fsp.rm(file, { force: true })
    throw e
  }
  if (total === 0) {
    await fsp.rm(file, { force: true })
    throw unreadable({ en: 'the body is empty', zh: '请求体为空' })
  }
  return file
}

async function sweepStale(dir: string): Promise<void> {
  const before = Date.now() - STALE_MS
  for (const name of await fsp.readdir(dir).catch(() => [] as string[])) {
    const p = path.join(dir, name)
    const st = await fsp.stat(p).catch(() => null)
    if (st !== null && st.mtimeMs < before) await fsp.rm(p, { force: true }).catch(() => {})
  }
}

/** An error of yauzl (opening, the central directory, an entry's data) as the deploy's error. */
function zipError(e: unknown): AppError {
  if (e instanceof AppError) return e
  const message = (e as Error | undefined)?.message ?? 'unreadable'
  const m = YAUZL_NAME_ERROR.exec(message)
  if (m) {
    const shown = JSON.stringify(m[2])
    if (m[1] === 'absolute path') return new AppError('ARCHIVE_ABSOLUTE', { params: { path: shown } })
    if (m[1] === 'invalid relative path') return new AppError('ARCHIVE_TRAVERSAL', { params: { path: shown } })
    return new AppError('ARCHIVE_BAD_PATH', { params: { path: shown, detail: { en: 'backslash', zh: '含反斜杠' } } })
  }
  if (/strong encryption/i.test(message)) return new AppError('ARCHIVE_ENCRYPTED', { params: { path: '(strong encryption)' } })
  if (/too many bytes in the stream/.test(message))
    return unreadable({ en: `an entry inflates to more bytes than it declares (${message})`, zh: '某个条目解压后超过其声明的大小' })
  return unreadable({ en: `not a readable zip (${message})`, zh: '不是可读的 zip 文件' })
}

/** The kind of a zip entry, from its name and the Unix mode in its attributes (0: none recorded). */
function kindOf(e: yauzl.Entry): string {
  if (e.fileName.endsWith('/')) return 'directory'
  switch ((e.externalFileAttributes >>> 16) & 0o170000) {
    case 0:
    case 0o100000:
      return 'file'
    case 0o040000:
      return 'directory'
    case 0o120000:
      return 'symlink'
    case 0o020000:
      return 'character-device'
    case 0o060000:
      return 'block-device'
    case 0o010000:
      return 'fifo'
    default:
      return 'socket'
  }
}

/** A path a deploy leaves out: dot-names (but .well-known/), as `svc deploy` and the dashboard do. */
const leftOut = (p: string): boolean => p.split('/').some((seg) => seg.startsWith('.') && seg !== '.well-known')

/**
 * Opens the zip `file` and checks it whole: every entry's name, kind and declared size by the
 * central directory first (nothing inflated), then every file inflated once (yauzl stops an
 * entry at its declared size), giving each its SHA-256, while its bytes are written to a
 * staging file (`file` + STAGED, in the spool folder, so a crash's is swept with the zip). The
 * zip is closed before this returns; on any refusal the staging file is removed too.
 */
export async function readZip(file: string, limits: ZipLimits): Promise<ZipSite> {
  let zip: yauzl.ZipFile
  try {
    zip = await openZip(file)
  } catch (e) {
    throw zipError(e)
  }
  const openEntry = (entry: yauzl.Entry) => new Promise<Readable>((res, rej) => zip.openReadStream(entry, (err, s) => (err ? rej(zipError(err)) : res(s))))
  const staging = file + STAGED
  let out: fsp.FileHandle | null = null
  const discard = async () => {
    await out?.close().catch(() => {})
    await fsp.rm(staging, { force: true })
  }
  try {
    if (zip.entryCount > limits.maxEntries)
      throw tooLarge(`${zip.entryCount} entries, at most ${limits.maxEntries}`, `${zip.entryCount} 个条目，最多 ${limits.maxEntries} 个`)
    const next = () => nextEntry(zip)
    // pass 1: the central directory only
    const listed: Array<{ path: string; entry: yauzl.Entry }> = []
    const names = new Set<string>()
    const top = new Map<string, boolean>()
    for (let e = await next(); e; e = await next()) {
      const shown = JSON.stringify(e.fileName)
      const kind = kindOf(e)
      const refused = refuseType(kind, shown)
      if (refused) throw refused
      if (kind === 'directory') {
        if (ROOT_DIR.test(e.fileName)) continue
        const p = entryPath(e.fileName)
        top.set(p.split('/')[0], true)
        continue
      }
      if (e.isEncrypted()) throw new AppError('ARCHIVE_ENCRYPTED', { params: { path: shown } })
      const p = entryPath(e.fileName)
      if (names.has(p))
        throw new AppError('ARCHIVE_UNEXPECTED', {
          params: { path: JSON.stringify(p), detail: { zh: '在归档中出现了两次', en: 'appears twice in the archive' } },
        })
      names.add(p)
      const first = p.split('/')[0]
      top.set(first, (top.get(first) ?? false) || first !== p)
      listed.push({ path: p, entry: e })
    }
    // a zip of one folder deploys that folder (util/archive-root.ts, as `svc deploy x.zip`)
    const folder = archiveTopFolder([...top].map(([name, dir]) => ({ name, dir })))
    const prefix = folder === null ? '' : `${folder}/`
    const kept = listed
      .filter((l) => l.path.startsWith(prefix) && l.path.split('/')[0] !== '__MACOSX')
      .map((l) => ({ path: l.path.slice(prefix.length), entry: l.entry }))
      .filter((l) => !leftOut(l.path))
    if (kept.length > limits.maxFiles) throw tooLarge(`${kept.length} files, at most ${limits.maxFiles}`, `${kept.length} 个文件，最多 ${limits.maxFiles} 个`)
    const tree = new PathTree()
    let declared = 0
    for (const { path: p, entry } of kept) {
      const clash = tree.add(p)
      if (clash) throw new AppError('ARCHIVE_BAD_PATH', { params: { path: JSON.stringify(p), detail: clash } })
      if (entry.uncompressedSize > limits.maxFileBytes)
        throw new AppError('ARCHIVE_FILE_TOO_LARGE', { params: { path: JSON.stringify(p), limit: limits.maxFileBytes } })
      declared += entry.uncompressedSize
      if (declared > limits.maxDeployBytes)
        throw tooLarge(`the zip unpacks to more than ${sizeText(limits.maxDeployBytes).en}`, `zip 解压后超过 ${sizeText(limits.maxDeployBytes).zh}`)
    }
    if (!kept.some((l) => l.path === 'index.html')) throw new AppError('PUBLISH_NO_INDEX')
    // pass 2: every file inflated once, bounded by its declared size (validateEntrySizes), its
    // bytes hashed and staged on the way. Bytes met before under another path are not kept
    // twice: the next file's bytes go where that copy's went
    out = await fsp.open(staging, 'wx+', 0o600)
    const fh = out
    const files: ZipFileEntry[] = []
    const staged = new Map<string, number>()
    let end = 0
    for (const { path: p, entry } of kept) {
      const watcher = new ContentWatcher(0)
      const hash = crypto.createHash('sha256')
      const start = end
      let pos = start
      const sink = new Writable({
        highWaterMark: 256 * 1024,
        writev(chunks, cb) {
          const buf = chunks.length === 1 ? (chunks[0].chunk as Buffer) : Buffer.concat(chunks.map((c) => c.chunk as Buffer))
          hash.update(buf)
          // a synchronous write: an inflated chunk goes to the page cache in microseconds, less
          // than a thread pool round trip costs (as the blob store's batches write)
          try {
            for (let done = 0; done < buf.length;) done += fs.writeSync(fh.fd, buf, done, buf.length - done, pos + done)
          } catch (e) {
            return cb(e as Error)
          }
          pos += buf.length
          cb()
        },
      })
      try {
        await pipeline(await openEntry(entry), watcher, sink)
      } catch (e) {
        throw zipError(e)
      }
      const digest = hash.digest('hex')
      const first = staged.get(digest)
      if (first === undefined) {
        staged.set(digest, start)
        end = pos
      }
      files.push({ path: p, digest, size: watcher.size, utf8: watcher.validUtf8, keyTokens: watcher.keyTokens, offset: first ?? start })
    }
    zip.close()
    // small files are read in order, and staged one after another: one read takes the next
    // READ_AHEAD bytes, and the files in them are slices of it
    let window: Buffer = Buffer.alloc(0)
    let windowAt = 0
    return {
      files,
      read: async (f) => {
        if (f.offset < windowAt || f.offset + f.size > windowAt + window.length) {
          windowAt = f.offset
          window = await readAt(fh, Math.min(Math.max(f.size, READ_AHEAD), end - f.offset), f.offset)
          if (window.length < f.size) throw new Error(`zip deploy: the staging file ends inside ${JSON.stringify(f.path)}`)
        }
        return window.subarray(f.offset - windowAt, f.offset - windowAt + f.size)
      },
      open: (f) => (f.size === 0 ? Readable.from([]) : fs.createReadStream(staging, { start: f.offset, end: f.offset + f.size - 1 })),
      close: discard,
    }
  } catch (e) {
    zip.close()
    await discard()
    throw zipError(e)
  }
}

/** Reads `len` bytes of `fh` at `pos`, fewer only at its end. */
async function readAt(fh: fsp.FileHandle, len: number, pos: number): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(len)
  let done = 0
  while (done < len) {
    const { bytesRead } = await fh.read(buf, done, len - done, pos + done)
    if (bytesRead === 0) break
    done += bytesRead
  }
  return buf.subarray(0, done)
}

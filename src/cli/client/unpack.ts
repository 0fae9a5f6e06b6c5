/**
 * svc deploy of an archive file (site.zip, site.tar.gz, site.tgz, site.tar), as Netlify takes a
 * zip: it is unpacked into a fresh temporary folder, which is then deployed as a folder is.
 * Only regular files and folders are unpacked; a name that would leave the folder (absolute, a
 * `..` segment), a link or a device is refused before anything is sent, and the unpacked size
 * is bounded by the server's deploy limits, so a zip bomb stops at that size.
 */
import fs from 'node:fs'
import fsp from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { pipeline } from 'node:stream/promises'
import { Transform, type Readable } from 'node:stream'
import zlib from 'node:zlib'
import tar from 'tar-stream'
import yauzl from 'yauzl'
import { CliError } from './errors.js'
import { MANIFEST_ENTRY } from '../../util/deploy-manifest.js'
import { archiveTopFolder } from '../../util/archive-root.js'

export type ArchiveKind = 'zip' | 'tar' | 'tar.gz'

/** An archive's kind by its first bytes; null for anything else. */
export function archiveKind(head: Buffer): ArchiveKind | null {
  if (head.length >= 4 && head[0] === 0x50 && head[1] === 0x4b && (head[2] === 3 || head[2] === 5)) return 'zip'
  if (head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b) return 'tar.gz'
  if (head.length >= 262 && head.subarray(257, 262).toString('latin1') === 'ustar') return 'tar'
  return null
}

export interface Unpacked {
  /** The folder to deploy: the archive's root, or its one top-level folder (below). */
  dir: string
  kind: ArchiveKind
  cleanup(): Promise<void>
}

interface Bounds {
  maxFiles: number
  maxBytes: number
}

/**
 * When `file` is an archive, unpacks it (within `bounds`, asked only then) and returns the folder to deploy; null when it is not
 * a regular file (a folder: the caller deploys it as usual). A regular file that is no archive
 * is refused. An archive whose root holds no index.html but exactly one folder (zip -r site.zip
 * site, tar -czf site.tgz site) deploys that folder, as Netlify does with such a zip.
 */
export async function unpackArchive(file: string, bounds: () => Promise<Bounds>): Promise<Unpacked | null> {
  const st = await fsp.stat(file).catch(() => null)
  if (st === null || !st.isFile()) return null
  const fd = await fsp.open(file, 'r')
  const head = Buffer.alloc(512)
  let n: number
  try {
    n = (await fd.read(head, 0, 512, 0)).bytesRead
  } finally {
    await fd.close()
  }
  const kind = archiveKind(head.subarray(0, n))
  if (kind === null) throw new CliError(`${file} is not a folder, nor a .zip, .tar.gz or .tar archive`)
  await sweepStale(os.tmpdir())
  const root = await fsp.mkdtemp(path.join(os.tmpdir(), TEMP_PREFIX))
  // Ctrl-C or a SIGTERM while unpacking or deploying removes the folder, then ends the process
  // as the signal would have; a kill -9 cannot be caught, and the next deploy sweeps that one
  const onSignal = (signal: NodeJS.Signals) => {
    fs.rmSync(root, { recursive: true, force: true })
    process.kill(process.pid, signal)
  }
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)
  const cleanup = async () => {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
    await fsp.rm(root, { recursive: true, force: true })
  }
  try {
    const writer = new Writer(file, root, await bounds())
    if (kind === 'zip') await unzip(file, writer)
    else await untar(file, kind === 'tar.gz', writer)
    return { dir: await deployRoot(root), kind, cleanup }
  } catch (e) {
    await cleanup()
    throw e
  }
}

const TEMP_PREFIX = 'svc-deploy-'
/** How old a left-behind unpacked folder must be before a deploy removes it. */
const STALE_MS = 24 * 3600 * 1000

/**
 * Removes this user's unpacked folders older than a day from the temporary folder: those of a
 * deploy killed with kill -9 (or a crash), which could not remove its own. Best effort.
 */
async function sweepStale(tmp: string): Promise<void> {
  const names = await fsp.readdir(tmp).catch(() => [] as string[])
  const uid = process.getuid?.()
  const before = Date.now() - STALE_MS
  for (const name of names) {
    if (!name.startsWith(TEMP_PREFIX)) continue
    const p = path.join(tmp, name)
    const st = await fsp.lstat(p).catch(() => null)
    if (st === null || !st.isDirectory() || st.mtimeMs > before || (uid !== undefined && st.uid !== uid)) continue
    await fsp.rm(p, { recursive: true, force: true }).catch(() => {})
  }
}

/** The archive's root, or its only top-level folder when the root has no index.html (archiveTopFolder). */
async function deployRoot(root: string): Promise<string> {
  const top = (await fsp.readdir(root, { withFileTypes: true })).map((e) => ({ name: e.name, dir: e.isDirectory() }))
  const folder = archiveTopFolder(top)
  return folder === null ? root : path.join(root, folder)
}

/** Writes entries below `root`, checking each name and the running totals. */
class Writer {
  private files = 0
  private bytes = 0
  constructor(
    private readonly archive: string,
    private readonly root: string,
    private readonly bounds: Bounds,
  ) {}

  private refuse(name: string, why: string): never {
    throw new CliError(`${this.archive}: entry "${name}" ${why}; nothing was sent`)
  }

  /** The entry's path below the root, or null for entries that are skipped (the root, macOS's __MACOSX/). */
  target(name: string): string | null {
    const rel = name.replace(/\\/g, '/').replace(/^(\.\/)+/, '')
    if (rel === '' || rel === '.' || rel === './') return null
    if (rel.startsWith('/') || /^[A-Za-z]:/.test(rel)) this.refuse(name, 'is an absolute path')
    const parts = rel.split('/').filter((p) => p !== '' && p !== '.')
    if (parts.includes('..')) this.refuse(name, 'has a ".." segment')
    if (parts[0] === '__MACOSX') return null
    return parts.length === 0 ? null : path.join(this.root, ...parts)
  }

  async dir(name: string): Promise<void> {
    const t = this.target(name)
    if (t !== null) await fsp.mkdir(t, { recursive: true })
  }

  /** Unpacks one file; its bytes count toward the bounds as they arrive. */
  async put(name: string, src: Readable): Promise<void> {
    const t = this.target(name)
    if (t === null) {
      src.resume()
      return
    }
    if (++this.files > this.bounds.maxFiles)
      throw new CliError(`${this.archive} holds more than ${this.bounds.maxFiles} files, the most a deploy takes (error 1328); nothing was sent`)
    await fsp.mkdir(path.dirname(t), { recursive: true }).catch(() => this.refuse(name, 'is inside a name that is also a file'))
    const count = new Transform({
      transform: (chunk: Buffer, _enc, cb) => {
        this.bytes += chunk.length
        if (this.bytes > this.bounds.maxBytes)
          cb(new CliError(`${this.archive} unpacks to more than ${this.bounds.maxBytes} bytes, the most a deploy takes (error 1328); nothing was sent`))
        else cb(null, chunk)
      },
    })
    // never through a name that exists: no entry can write twice or through what another made
    await pipeline(src, count, fs.createWriteStream(t, { flags: 'wx' })).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'EEXIST') this.refuse(name, 'is in the archive twice')
      if (e.code === 'EISDIR') this.refuse(name, 'is both a file and a folder')
      throw e instanceof CliError ? e : new CliError(`${this.archive}: cannot unpack "${name}": ${e.message}`)
    })
  }
}

async function untar(file: string, gzip: boolean, w: Writer): Promise<void> {
  const extract = tar.extract()
  const src = fs.createReadStream(file)
  const done = (gzip ? pipeline(src, zlib.createGunzip(), extract) : pipeline(src, extract)).catch((e: Error) => {
    throw e instanceof CliError ? e : new CliError(`${file} is not a readable ${gzip ? 'tar.gz' : 'tar'} archive (${e.message})`)
  })
  let first = true
  try {
    for await (const entry of extract) {
      const h = entry.header
      // an archive deploy's body (a deploy downloaded from .../archive) starts with the server's
      // manifest, which describes the files and is none of them
      const manifest = first && h.type === 'file' && h.name.replace(/^(\.\/)+/, '') === MANIFEST_ENTRY
      first = false
      if (manifest) entry.resume()
      else if (h.type === 'file' || h.type === 'contiguous-file') await w.put(h.name, entry as unknown as Readable)
      else if (h.type === 'directory') {
        await w.dir(h.name)
        entry.resume()
      } else {
        const t = w.target(h.name)
        entry.resume()
        if (t !== null)
          throw new CliError(
            `${file}: entry "${h.name}" is a ${h.type === 'symlink' ? 'symbolic link' : h.type === 'link' ? 'hard link' : h.type}, which a deploy does not take; nothing was sent`,
          )
      }
    }
  } catch (e) {
    extract.destroy()
    await done.catch(() => {})
    throw e
  }
  await done
}

async function unzip(file: string, w: Writer): Promise<void> {
  const zip = await new Promise<yauzl.ZipFile>((res, rej) =>
    yauzl.open(file, { lazyEntries: true, autoClose: false, validateEntrySizes: true, decodeStrings: true, strictFileNames: false }, (e, z) =>
      e ? rej(new CliError(`${file} is not a readable zip archive (${e.message})`)) : res(z),
    ),
  )
  try {
    for (;;) {
      const entry = await new Promise<yauzl.Entry | null>((res, rej) => {
        const off = () => (zip.off('entry', onEntry), zip.off('end', onEnd), zip.off('error', onError))
        const onEntry = (e: yauzl.Entry) => (off(), res(e))
        const onEnd = () => (off(), res(null))
        const onError = (e: Error) => (off(), rej(new CliError(`${file} is not a readable zip archive (${e.message})`)))
        zip.on('entry', onEntry).on('end', onEnd).on('error', onError)
        zip.readEntry()
      })
      if (entry === null) return
      const name = entry.fileName
      // the upper 16 bits of a zip made on Unix are the file's mode: S_IFLNK marks a link
      const type = (entry.externalFileAttributes >>> 16) & 0o170000
      if (name.endsWith('/')) await w.dir(name)
      else if (type === 0o120000) {
        if (w.target(name) !== null) throw new CliError(`${file}: entry "${name}" is a symbolic link, which a deploy does not take; nothing was sent`)
      } else {
        if (entry.isEncrypted()) throw new CliError(`${file}: entry "${name}" is encrypted; nothing was sent`)
        const src = await new Promise<Readable>((res, rej) =>
          zip.openReadStream(entry, (e, s) => (e ? rej(new CliError(`${file}: cannot read "${name}" (${e.message})`)) : res(s))),
        )
        await w.put(name, src)
      }
    }
  } finally {
    zip.close()
  }
}

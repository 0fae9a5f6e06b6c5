import crypto from 'node:crypto'
import fs from 'node:fs'
import zlib from 'node:zlib'
import type { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import tar from 'tar-stream'
import type yauzl from 'yauzl'
import { nextEntry, openZip, YAUZL_NAME_ERROR } from '../../util/zip-reader.js'
import yazl from 'yazl'
import { sql } from 'kysely'
import type { Db, Trx } from '../../db/kysely.js'
import { addUsage, versionsKind } from '../../db/usage.js'
import type { BlobStore } from '../../storage/blob-store.js'
import { tarWriter, type ArchiveWriter } from '../../util/archive-writer.js'
import { createBlobBatch } from '../../storage/batch.js'
import { withBlobLease } from '../../storage/leases.js'
import { hashPassword } from '../../auth/passwords.js'
import { newId, newPublicToken, randomString } from '../../auth/tokens.js'
import { TIERS, usernameProblem } from '../../auth/account-rules.js'
import { csvExport } from '../forms/export.js'
import { createKvStore } from '../kv/store.js'
import { parseFieldsConfig } from '../forms/fields.js'
import { formStore, type SubmissionRow } from '../forms/store.js'
import { blockedDigests } from '../abuse/store.js'
import { siteBytes } from '../sites/site-usage.js'
import { quotaOf } from '../../limits/quotas.js'
import { takedownDigests } from '../image-host/inspect.js'

/**
 * One user's data as a zip or a gzip'd tar archive (docs/operations/export.md): the same
 * entries, bytes and manifest in either container (ArchiveWriter). Entries, in order:
 *   manifest.json   {format, kind, created_at, username, data: {sha256,size}, entries: [{path, sha256, size}]}
 *   data.json       the user's rows (exact, for import): files, folders with their files (and
 *                   user_site, the project that is the user site), kv
 *                   (and kv_retired_version, decision 150), forms with submissions (and
 *                   their files), images, hosted data with versions
 *   pages/<file>, projects/<project>/<path>, images/<id>, data/<token>/v<N>,
 *                   form-files/<id>: the bytes (each
 *                   entry's sha256 is the blob digest its row names)
 *   kv.json, forms/<slug>/submissions.csv|json: readable views (not read by import)
 * Import tells the containers apart by their first bytes and reads the archive twice: first
 * it checks every entry against the manifest without writing anything; only then does it
 * store the blobs and insert the rows in one transaction.
 */

export const EXPORT_FORMAT = 1
const KIND = 'svc-user-export'
const MAX_JSON_BYTES = 256 * 1024 * 1024
const MAX_ENTRIES = 200_000
/** Import stores entries up to this size in batches (storage/batch.ts) when the store has putBatch. */
const IMPORT_SMALL_BLOB = 1024 * 1024
/** The sum of the manifest's sizes that import accepts (what every entry together may expand to). */
export const MAX_ARCHIVE_BYTES = 64 * 1024 ** 3

/** A refused archive or an impossible import, reported as is (exit 1). */
export class ExportError extends Error {
  override name = 'ExportError'
}

/** A row as data.json carries it (checked column by column on import: string, number or null). */
type Row = Record<string, any>

/** The columns each table's rows carry in data.json (never user_id or internal ids that import renews). */
const COLUMNS = {
  files: ['file_name', 'project_name', 'description', 'digest', 'size', 'content_type', 'is_featured', 'created_at', 'updated_at'],
  folders: ['name', 'is_published', 'created_at', 'updated_at', 'published_at', 'site_rules'],
  folder_files: ['path', 'digest', 'size', 'content_type', 'created_at', 'updated_at'],
  kv_entries: ['key', 'value', 'data_type', 'tags', 'is_public', 'version', 'size', 'created_at', 'updated_at', 'expires_at', 'public_incr'],
  forms: [
    'form_name',
    'form_slug',
    'slug_key',
    'fields_config',
    'allowed_origins',
    'redirect_url',
    'is_active',
    'honeypot_field',
    'min_fill_seconds',
    'created_at',
    'updated_at',
  ],
  form_submissions: ['seq', 'data', 'is_read', 'is_spam', 'spam_reason', 'user_agent', 'ip_prefix', 'created_at'],
  form_files: ['field', 'filename', 'content_type', 'size', 'digest', 'created_at'],
  images: ['public_token', 'file_name', 'remark', 'content_type', 'size', 'digest', 'width', 'height', 'locked', 'created_at', 'updated_at'],
  hosted_files: ['public_token', 'display_name', 'description', 'default_version', 'latest_version', 'locked', 'created_at', 'updated_at'],
  hosted_versions: ['version', 'digest', 'size', 'content_type', 'created_at'],
} as const
type Table = keyof typeof COLUMNS

/** Columns added after the format was fixed: absent in older archives, which import with this value. */
const ADDED: { [T in Table]?: Record<string, number> } = { kv_entries: { public_incr: 0 } }

export interface ExportData {
  user: { username: string; tier: string; limits: string; api_access: number; entitlements: string[] }
  files: Array<Row & { content: string }>
  folders: Array<Row & { files: Array<Row & { content: string }> }>
  /**
   * The name of the folder project that is the user's user site (decision 277), one of
   * `folders`; null: none. Absent in older archives: none.
   */
  user_site?: string | null
  kv: Row[]
  /**
   * kv_usage.retired_version: every version a deleted or expired entry had is at most this, so
   * the importing instance never gives one again (decision 150). Absent in older archives: 0.
   */
  kv_retired_version?: number
  /** A submission's `files` are absent in archives made before form files. */
  forms: Array<Row & { submissions: Array<Row & { files?: Array<Row & { content: string }> }> }>
  images: Array<Row & { content: string }>
  hosted_data: Array<Row & { versions: Array<Row & { content: string }> }>
}

export interface Manifest {
  format: number
  kind: string
  created_at: string
  username: string
  data: { sha256: string; size: number }
  entries: Array<{ path: string; sha256: string; size: number }>
}

const pick = (table: Table, r: Record<string, unknown>): Row => {
  const out: Row = {}
  for (const c of COLUMNS[table]) {
    const v = r[c]
    out[c] = v === undefined || v === null ? null : typeof v === 'number' || typeof v === 'bigint' ? Number(v) : typeof v === 'string' ? v : JSON.stringify(v)
  }
  return out
}

/**
 * A safe relative entry name: segments of printable characters other than / and \, none of
 * them "." or "..", no leading slash, at most 1,024 bytes. Anything else is refused on import.
 */
export function safeEntryName(name: string): boolean {
  if (!name || Buffer.byteLength(name) > 1024 || name.startsWith('/')) return false
  if (/[\\\u0000-\u001f\u007f]/.test(name)) return false
  return name.split('/').every((s) => s !== '' && s !== '.' && s !== '..')
}

/** Reads one user's rows (the export's data.json), with the archive path of each blob. */
async function readUser(db: Db, username: string): Promise<{ userId: string; data: ExportData }> {
  const u = await db.k.selectFrom('users').selectAll().where('username', '=', username).executeTakeFirst()
  if (!u) throw new ExportError(`no user "${username}"`)
  const uid = u.id
  const ents = await db.k.selectFrom('entitlements').select('feature').where('user_id', '=', uid).execute()
  const used = new Set<string>()
  /** An archive path for a blob: the readable one if it is safe and unused, else blobs/<digest>. */
  const place = (want: string, digest: string) => {
    const p = safeEntryName(want) && !used.has(want) && want !== 'manifest.json' && want !== 'data.json' ? want : `blobs/${digest}`
    used.add(p)
    return p
  }
  const files = (await db.k.selectFrom('files').selectAll().where('user_id', '=', uid).orderBy('file_name').execute()).map((r) => ({
    ...pick('files', r),
    content: place(`pages/${r.file_name}`, r.digest),
  }))
  const folders = []
  let userSite: string | null = null
  for (const f of await db.k.selectFrom('folders').selectAll().where('user_id', '=', uid).orderBy('name').execute()) {
    if (Number(f.user_site) === 1) userSite = f.name
    const ff = await db.k.selectFrom('folder_files').selectAll().where('folder_id', '=', f.id).orderBy('path').execute()
    // the rules in force are the live deploy's (folders.site_rules predates deploys)
    const live = f.live_deploy_id ? await db.k.selectFrom('deploys').select('site_rules').where('id', '=', f.live_deploy_id).executeTakeFirst() : undefined
    const rules = live ? { site_rules: live.site_rules } : {}
    folders.push({
      ...pick('folders', f),
      ...rules,
      files: ff.map((r) => ({ ...pick('folder_files', r), content: place(`projects/${f.name}/${r.path}`, r.digest) })),
    })
  }
  const kv = (await db.k.selectFrom('kv_entries').selectAll().where('user_id', '=', uid).orderBy('key').execute()).map((r) => pick('kv_entries', r))
  const kvUsage = await db.k.selectFrom('kv_usage').select('retired_version').where('user_id', '=', uid).executeTakeFirst()
  const forms = []
  for (const f of await db.k.selectFrom('forms').selectAll().where('user_id', '=', uid).orderBy('created_at').execute()) {
    const subs = await db.k.selectFrom('form_submissions').selectAll().where('form_id', '=', f.id).orderBy('seq').execute()
    const files = await db.k.selectFrom('form_files').selectAll().where('form_id', '=', f.id).orderBy('created_at').orderBy('id').execute()
    const filesOf = (id: string) =>
      files.filter((r) => r.submission_id === id).map((r) => ({ ...pick('form_files', r), content: place(`form-files/${r.id}`, r.digest) }))
    forms.push({ ...pick('forms', f), submissions: subs.map((s) => ({ id: s.id, ...pick('form_submissions', s), files: filesOf(s.id) })) })
  }
  const images = (await db.k.selectFrom('images').selectAll().where('user_id', '=', uid).orderBy('created_at').execute()).map((r) => ({
    ...pick('images', r),
    content: place(`images/${r.id}`, r.digest),
  }))
  const hosted = []
  for (const f of await db.k.selectFrom('hosted_files').selectAll().where('user_id', '=', uid).orderBy('created_at').execute()) {
    const vs = await db.k.selectFrom('hosted_versions').selectAll().where('file_id', '=', f.id).orderBy('version').execute()
    hosted.push({
      ...pick('hosted_files', f),
      versions: vs.map((v) => ({ ...pick('hosted_versions', v), content: place(`data/${f.public_token}/v${v.version}`, v.digest) })),
    })
  }
  return {
    userId: uid,
    data: {
      user: { username: u.username, tier: u.tier, limits: u.limits, api_access: Number(u.api_access), entitlements: ents.map((e) => e.feature).sort() },
      files,
      folders,
      user_site: userSite,
      kv,
      kv_retired_version: kvUsage ? Number(kvUsage.retired_version) : 0,
      forms,
      images,
      hosted_data: hosted,
    },
  }
}

/** Every blob of the data with its archive path (each path once). */
function blobEntries(d: ExportData): Array<{ path: string; digest: string; size: number }> {
  const out = new Map<string, { path: string; digest: string; size: number }>()
  const add = (r: Row & { content: string }) => out.set(r.content, { path: r.content, digest: String(r.digest), size: Number(r.size) })
  d.files.forEach(add)
  d.folders.forEach((f) => f.files.forEach(add))
  d.images.forEach(add)
  d.hosted_data.forEach((f) => f.versions.forEach(add))
  d.forms.forEach((f) => f.submissions.forEach((x) => x.files?.forEach(add)))
  return [...out.values()]
}

const sha256 = (b: Buffer | string) => crypto.createHash('sha256').update(b).digest('hex')

/** The two containers of an export: the same entries in a zip or in a gzip'd tar. */
export type ArchiveFormat = 'zip' | 'tar.gz'

/** Writes the export of `username` to `out` as a zip or a tar.gz (the same entries in both). */
export async function writeExport(
  db: Db,
  blobs: BlobStore,
  username: string,
  out: Writable,
  format: ArchiveFormat = 'tar.gz',
  now = new Date(),
): Promise<void> {
  const { data } = await readUser(db, username)
  const views = new Map<string, Buffer>()
  views.set(
    'kv.json',
    Buffer.from(
      JSON.stringify(
        data.kv.map((r) => ({
          key: r.key,
          value: JSON.parse(String(r.value)) as unknown,
          type: r.data_type,
          tags: JSON.parse(String(r.tags)) as unknown,
          public: !!r.is_public,
        })),
        null,
        2,
      ),
    ),
  )
  for (const f of data.forms) {
    const slug = String(f.form_slug)
    if (!safeEntryName(slug)) continue
    let fields: ReturnType<typeof parseFieldsConfig> = []
    try {
      fields = parseFieldsConfig(JSON.parse(String(f.fields_config)))
    } catch {}
    const rows = async function* () {
      for (const s of f.submissions) yield s as unknown as SubmissionRow
    }
    let csv = ''
    // a file's column names its entry in this archive
    for await (const chunk of csvExport(fields, rows, (x) => (x as unknown as { content: string }).content)) csv += chunk
    views.set(`forms/${slug}/submissions.csv`, Buffer.from(csv))
    views.set(
      `forms/${slug}/submissions.json`,
      Buffer.from(
        JSON.stringify(
          f.submissions.map((s) => ({ ...s, data: JSON.parse(String(s.data)) as unknown })),
          null,
          2,
        ),
      ),
    )
  }
  const json = Buffer.from(JSON.stringify(data))
  const blobList = blobEntries(data)
  const manifest: Manifest = {
    format: EXPORT_FORMAT,
    kind: KIND,
    created_at: now.toISOString(),
    username: data.user.username,
    data: { sha256: sha256(json), size: json.length },
    entries: [
      ...blobList.map((b) => ({ path: b.path, sha256: b.digest, size: b.size })),
      ...[...views].map(([p, b]) => ({ path: p, sha256: sha256(b), size: b.length })),
    ],
  }
  const w = format === 'zip' ? zipWriter(out, now) : tarWriter(out, now)
  try {
    await w.add('manifest.json', Buffer.from(JSON.stringify(manifest, null, 2)))
    await w.add('data.json', json)
    for (const b of blobList) await w.add(b.path, { size: b.size, open: () => blobs.get(b.digest) })
    for (const [p, b] of views) await w.add(p, b)
  } catch (e) {
    w.abort(e as Error)
  }
  await w.finish()
}

/**
 * zip (yazl, deflate, zip64 when sizes need it): entries are queued and yazl writes them one by
 * one, computing each CRC-32 as the bytes pass; a Lazy entry's declared size is checked by yazl
 * (a blob of another length fails the export instead of writing a wrong header).
 */
function zipWriter(out: Writable, mtime: Date): ArchiveWriter {
  const zip = new yazl.ZipFile()
  const output = zip.outputStream as Readable
  let zipError: Error | null = null
  const failed = new Promise<never>((_res, rej) =>
    zip.on('error', (e: Error) => {
      zipError = e
      output.destroy(e)
      rej(e)
    }),
  )
  failed.catch(() => {})
  const done = pipeline(output, out)
  return {
    async add(name, body) {
      if (zipError) throw zipError
      if (Buffer.isBuffer(body)) zip.addBuffer(body, name, { mtime, mode: 0o100644 })
      else
        zip.addReadStreamLazy(name, { mtime, mode: 0o100644, size: body.size }, (cb) => {
          body.open().then(
            (s) => cb(null, s),
            (e: Error) => cb(e, undefined as never),
          )
        })
    },
    abort(e) {
      zip.emit('error', e)
    },
    async finish() {
      if (!zipError) zip.end()
      await Promise.race([done, failed])
      if (zipError) throw zipError
    },
  }
}

/** Which container `file` is, by its first bytes: zip (PK\x03\x04) or gzip (1f 8b, a .tar.gz). */
function containerOf(file: string): ArchiveFormat {
  const head = Buffer.alloc(4)
  const n = (() => {
    let fd: number
    try {
      fd = fs.openSync(file, 'r')
    } catch (e) {
      throw new ExportError(`cannot read ${file}: ${(e as Error).message}`)
    }
    try {
      return fs.readSync(fd, head, 0, 4, 0)
    } finally {
      fs.closeSync(fd)
    }
  })()
  if (n === 4 && head.equals(Buffer.from([0x50, 0x4b, 0x03, 0x04]))) return 'zip'
  if (n >= 2 && head[0] === 0x1f && head[1] === 0x8b) return 'tar.gz'
  throw new ExportError("not an svc export: neither a zip nor a gzip'd tar archive")
}

/** An entry as import reads it: a plain file with a safe name and its declared size. */
interface Entry {
  name: string
  size: number
  stream: Readable
}

/** The entries of an export, zip or tar.gz (detected by its first bytes), one at a time. */
function entries(file: string): AsyncGenerator<Entry> {
  return containerOf(file) === 'zip' ? zipEntries(file) : tarEntries(file)
}

/** Checks common to both containers: a safe name, and not too many entries. */
function checkEntry(name: string, n: number): void {
  if (!safeEntryName(name)) throw new ExportError(`entry ${JSON.stringify(name)}: unsafe path (absolute, "..", "." or control characters)`)
  if (n > MAX_ENTRIES) throw new ExportError(`more than ${MAX_ENTRIES} entries`)
}

/** The tar entries of a .tar.gz file, one at a time; refuses anything but plain files with safe names. */
async function* tarEntries(file: string): AsyncGenerator<Entry> {
  const extract = tar.extract()
  const src = fs.createReadStream(file)
  const gunzip = zlib.createGunzip()
  const fail = (e: Error) => extract.destroy(e)
  src.on('error', fail)
  gunzip.on('error', (e) => fail(new ExportError(`not a gzip'd tar archive (${e.message})`)))
  src.pipe(gunzip).pipe(extract)
  let n = 0
  try {
    for await (const e of extract) {
      const { name, type, size } = e.header
      if (type !== 'file') throw new ExportError(`entry ${JSON.stringify(name)}: only plain files are allowed (found ${type})`)
      checkEntry(name, ++n)
      yield { name, size: size ?? 0, stream: e as unknown as Readable }
      e.resume()
    }
  } catch (e) {
    if (e instanceof ExportError) throw e
    throw new ExportError(`unreadable archive: ${(e as Error).message}`)
  } finally {
    src.destroy()
  }
}

/**
 * The entries of a zip file, in central-directory order (yauzl, random access). Refuses
 * directories, links and other non-regular files, encrypted entries and unsafe names; yauzl
 * checks each entry's inflated length against its declared size (validateEntrySizes), so an
 * entry cannot expand past the size that verifyArchive compared with the manifest.
 */
async function* zipEntries(file: string): AsyncGenerator<Entry> {
  let zip: yauzl.ZipFile
  try {
    zip = await openZip(file)
  } catch (e) {
    throw new ExportError(`unreadable archive: ${(e as Error).message}`)
  }
  const next = () => nextEntry(zip)
  let n = 0
  try {
    for (let e = await next(); e; e = await next()) {
      const name = e.fileName
      // the file type lives in the top bits of the external attributes when made on Unix
      const type = (e.externalFileAttributes >>> 16) & 0o170000
      if (name.endsWith('/') || (type !== 0 && type !== 0o100000))
        throw new ExportError(`entry ${JSON.stringify(name)}: only plain files are allowed (found ${name.endsWith('/') ? 'directory' : 'a link or device'})`)
      checkEntry(name, ++n)
      if (e.isEncrypted()) throw new ExportError(`entry ${JSON.stringify(name)}: encrypted entries are not allowed`)
      const stream = await new Promise<Readable>((res, rej) => zip.openReadStream(e, (err, s) => (err ? rej(err) : res(s))))
      yield { name, size: e.uncompressedSize, stream }
      stream.destroy()
    }
  } catch (e) {
    if (e instanceof ExportError) throw e
    const m = YAUZL_NAME_ERROR.exec((e as Error).message)
    if (m) throw new ExportError(`entry ${JSON.stringify(m[2])}: unsafe path (absolute, "..", "." or control characters)`)
    throw new ExportError(`unreadable archive: ${(e as Error).message}`)
  } finally {
    zip.close()
  }
}

async function readAll(s: Readable, max: number, what: string): Promise<Buffer> {
  const parts: Buffer[] = []
  let n = 0
  for await (const c of s as AsyncIterable<Buffer>) {
    n += c.length
    if (n > max) throw new ExportError(`${what} is larger than ${max} bytes`)
    parts.push(c)
  }
  return Buffer.concat(parts)
}

/**
 * A small entry's whole bytes in pass 2, for a batch. The containers deliver the declared size
 * (tar by its header, yauzl checks it), so more means the archive changed since pass 1; a read
 * failure is the archive's, as in pass 1. The digest is checked once the batch is stored.
 */
async function readEntry(e: Entry): Promise<Buffer> {
  const parts: Buffer[] = []
  let n = 0
  try {
    for await (const c of e.stream as AsyncIterable<Buffer>) {
      n += c.length
      if (n > e.size) throw new ExportError(`the archive changed while it was imported (${e.name})`)
      parts.push(c)
    }
  } catch (err) {
    if (err instanceof ExportError) throw err
    throw new ExportError(`unreadable archive: ${(err as Error).message}`)
  }
  return Buffer.concat(parts, n)
}

/** SHA-256 and length of a stream, stopping as soon as it is longer than `max` (size is then max + something). */
async function hashStream(s: Readable, max: number): Promise<{ sha256: string; size: number }> {
  const h = crypto.createHash('sha256')
  let size = 0
  for await (const c of s as AsyncIterable<Buffer>) {
    h.update(c)
    size += c.length
    if (size > max) break
  }
  return { sha256: h.digest('hex'), size }
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** The rows of one table from data.json: exactly its columns, each a string, number or null. */
function rowsOf(table: Table, v: unknown, where: string): Row[] {
  if (!Array.isArray(v)) throw new ExportError(`data.json: ${where} must be a list`)
  return v.map((r, i) => {
    if (!isObj(r)) throw new ExportError(`data.json: ${where}[${i}] must be an object`)
    for (const [c, v] of Object.entries(ADDED[table] ?? {})) if (!(c in r)) r[c] = v
    for (const c of COLUMNS[table]) {
      const x = r[c]
      if (!(x === null || typeof x === 'string' || (typeof x === 'number' && Number.isFinite(x))))
        throw new ExportError(`data.json: ${where}[${i}].${c} must be a string, a number or null`)
    }
    return r
  })
}

/**
 * Pass 1: reads the whole archive and checks it (manifest first, data.json second, every other
 * entry listed with its size and SHA-256, nothing missing, nothing twice, every row's blob an
 * entry whose SHA-256 is the row's digest). Writes nothing.
 */
export async function verifyArchive(file: string): Promise<{ manifest: Manifest; data: ExportData }> {
  let manifest: Manifest | null = null
  let data: ExportData | null = null
  const seen = new Set<string>()
  let expected = new Map<string, { sha256: string; size: number }>()
  try {
    for await (const e of entries(file)) {
      if (seen.has(e.name)) throw new ExportError(`entry ${e.name} appears twice`)
      seen.add(e.name)
      if (!manifest) {
        if (e.name !== 'manifest.json') throw new ExportError('the first entry must be manifest.json: not an svc export')
        let m: unknown
        try {
          m = JSON.parse((await readAll(e.stream, MAX_JSON_BYTES, 'manifest.json')).toString('utf8'))
        } catch (err) {
          if (err instanceof ExportError) throw err
          throw new ExportError('manifest.json is not JSON')
        }
        if (!isObj(m) || m.kind !== KIND) throw new ExportError('manifest.json: not an svc user export')
        if (m.format !== EXPORT_FORMAT) throw new ExportError(`manifest.json: format ${String(m.format)} (this version reads format ${EXPORT_FORMAT})`)
        if (!isObj(m.data) || !Array.isArray(m.entries) || typeof m.username !== 'string') throw new ExportError('manifest.json: incomplete')
        manifest = m as unknown as Manifest
        expected = new Map()
        let total = 0
        for (const x of manifest.entries) {
          if (!isObj(x) || typeof x.path !== 'string' || typeof x.sha256 !== 'string' || !Number.isSafeInteger(x.size) || x.size < 0 || !safeEntryName(x.path))
            throw new ExportError('manifest.json: a bad entry')
          if (expected.has(x.path) || x.path === 'data.json' || x.path === 'manifest.json') throw new ExportError(`manifest.json: ${x.path} listed twice`)
          expected.set(x.path, { sha256: x.sha256, size: x.size })
          total += x.size
        }
        if (total > MAX_ARCHIVE_BYTES) throw new ExportError(`the archive's files add up to more than ${MAX_ARCHIVE_BYTES} bytes`)
        continue
      }
      if (!data) {
        if (e.name !== 'data.json') throw new ExportError('the second entry must be data.json')
        if (e.size !== manifest.data.size) throw new ExportError('data.json does not match its checksum in manifest.json (the archive was changed)')
        const b = await readAll(e.stream, MAX_JSON_BYTES, 'data.json')
        if (b.length !== manifest.data.size || sha256(b) !== manifest.data.sha256)
          throw new ExportError('data.json does not match its checksum in manifest.json (the archive was changed)')
        try {
          data = JSON.parse(b.toString('utf8')) as ExportData
        } catch {
          throw new ExportError('data.json is not JSON')
        }
        continue
      }
      const want = expected.get(e.name)
      if (!want) throw new ExportError(`entry ${e.name} is not listed in manifest.json`)
      // the declared size first (read nothing of an entry that claims another size), then the bytes, read up to that size only
      const changed = () => new ExportError(`entry ${e.name} does not match its checksum in manifest.json (the archive was changed)`)
      if (e.size !== want.size) throw changed()
      const got = await hashStream(e.stream, want.size)
      if (got.size !== want.size || got.sha256 !== want.sha256) throw changed()
    }
  } catch (e) {
    // an entry's bytes that fail to inflate, or a zip entry longer than it declares (yauzl)
    if (e instanceof ExportError) throw e
    throw new ExportError(`unreadable archive: ${(e as Error).message}`)
  }
  if (!manifest) throw new ExportError('empty archive')
  if (!data) throw new ExportError('data.json is missing')
  for (const p of expected.keys()) if (!seen.has(p)) throw new ExportError(`entry ${p} is listed in manifest.json but missing`)
  checkData(data, expected)
  return { manifest, data }
}

/** data.json's shape, and every blob reference an entry whose checksum is the row's digest. */
function checkData(d: ExportData, expected: Map<string, { sha256: string; size: number }>): void {
  if (!isObj(d) || !isObj(d.user) || typeof d.user.username !== 'string') throw new ExportError('data.json: no user')
  const blob = (r: Row & { content?: unknown }, where: string) => {
    const e = typeof r.content === 'string' ? expected.get(r.content) : undefined
    if (!e || e.sha256 !== r.digest || e.size !== r.size) throw new ExportError(`data.json: ${where} names a missing or different file`)
  }
  rowsOf('files', d.files, 'files').forEach((r, i) => blob(r, `files[${i}]`))
  rowsOf('folders', d.folders, 'folders').forEach((f, i) =>
    rowsOf('folder_files', (f as { files?: unknown }).files, `folders[${i}].files`).forEach((r, j) => blob(r, `folders[${i}].files[${j}]`)),
  )
  // the user site names one of the archive's projects (the export writes it so; one per user)
  const site = d.user_site
  if (site !== undefined && site !== null && !(typeof site === 'string' && d.folders.some((f) => f.name === site)))
    throw new ExportError('data.json: user_site must be null or the name of one of its folders')
  rowsOf('kv_entries', d.kv, 'kv')
  const retired = d.kv_retired_version
  if (retired !== undefined && !(Number.isSafeInteger(retired) && retired >= 0)) throw new ExportError('data.json: kv_retired_version must be an integer >= 0')
  rowsOf('forms', d.forms, 'forms').forEach((f, i) =>
    rowsOf('form_submissions', (f as { submissions?: unknown }).submissions, `forms[${i}].submissions`).forEach((x, j) => {
      const where = `forms[${i}].submissions[${j}].files`
      if (x.files !== undefined) rowsOf('form_files', x.files, where).forEach((r, k) => blob(r, `${where}[${k}]`))
    }),
  )
  rowsOf('images', d.images, 'images').forEach((r, i) => blob(r, `images[${i}]`))
  rowsOf('hosted_files', d.hosted_data, 'hosted_data').forEach((f, i) =>
    rowsOf('hosted_versions', (f as { versions?: unknown }).versions, `hosted_data[${i}].versions`).forEach((r, j) =>
      blob(r, `hosted_data[${i}].versions[${j}]`),
    ),
  )
  if (!Array.isArray(d.user.entitlements) || !d.user.entitlements.every((x) => typeof x === 'string')) throw new ExportError('data.json: user.entitlements')
  if (!(TIERS as unknown[]).includes(d.user.tier)) throw new ExportError(`data.json: user.tier must be one of ${TIERS.join(', ')}`)
  let limits: unknown
  try {
    limits = JSON.parse(String(d.user.limits))
  } catch {
    limits = null
  }
  if (!isObj(limits)) throw new ExportError('data.json: user.limits must be a JSON object in a string')
}

/**
 * The digests the blocklist is asked about for each raster image of the archive (by entry
 * path): its bytes' and their metadata-free form's (takedownDigests), as an upload with
 * keep_metadata asks both, so an image kept with its metadata comes in no more than it would
 * be uploaded. An entry whose bytes differ from its row's digest is refused.
 */
async function imageForms(file: string, d: ExportData): Promise<Map<string, string[]>> {
  const want = new Map(d.images.filter((r) => r.content_type !== 'image/svg+xml').map((r) => [r.content, String(r.digest)]))
  const out = new Map<string, string[]>()
  if (want.size === 0) return out
  for await (const e of entries(file)) {
    const digest = want.get(e.name)
    if (digest === undefined) continue
    const digests = await takedownDigests(await readEntry(e))
    if (digests[0] !== digest) throw new ExportError(`the archive changed while it was imported (${e.name})`)
    out.set(e.name, digests)
  }
  return out
}

export interface ImportResult {
  username: string
  password: string
  counts: Record<string, number>
  /** Public tokens or form slugs that were taken on this instance and got new ones. */
  renamed: string[]
  /**
   * Quotas the imported account is already past (only `site_bytes` is read): an import is an
   * operator's restore and is not refused for them; the account keeps what it holds and
   * cannot add more until its limit is raised (decision 241).
   */
  overQuota: Array<{ quota: 'site_bytes'; used: number; limit: number }>
}

/**
 * Imports a verified archive as a new user (`as`, else the exported name): pass 1 checks it
 * (verifyArchive), pass 2 stores its blobs (each checked again against its digest), then one
 * transaction creates the user and every row with new ids. Public tokens and form slugs are
 * kept unless this instance already uses them. On any failure no row is written; blobs stored
 * before it are unreferenced and the sweeper removes them after its grace period. The name
 * follows the rule of a new account (usernameProblem; `reserved`: the names this
 * configuration reserves besides), whatever the exporting instance allowed.
 */
export async function importArchive(
  db: Db,
  blobs: BlobStore,
  file: string,
  as?: string,
  reserved: ReadonlySet<string> = new Set(),
  now = Date.now(),
): Promise<ImportResult> {
  const { data } = await verifyArchive(file)
  const username = (as ?? data.user.username).toLowerCase()
  const refused = usernameProblem(username, reserved)
  if (refused !== null) throw new ExportError(as === undefined ? `${refused} (use --as NEWNAME)` : refused)
  if (await db.k.selectFrom('users').select('id').where('username', '=', username).executeTakeFirst())
    throw new ExportError(`a user named ${username} exists already (use --as NEWNAME)`)

  // the blob paths, built once: pass 2 looks each entry up here
  const need = blobEntries(data)
  // content taken down on this instance refuses the whole archive, as any other bad entry:
  // asked before anything is stored, and again in the transaction under the new user's lock
  // (a takedown of the same bytes committed meanwhile)
  // (an image in both forms, as uploads ask: imageForms)
  const forms = await imageForms(file, data)
  const asked = need.map((b) => ({ path: b.path, digests: forms.get(b.path) ?? [b.digest] }))
  const refuseTakenDown = async (q: Db['k'] | Trx) => {
    const hit = await blockedDigests(
      q,
      asked.flatMap((b) => b.digests),
    )
    if (hit.size === 0) return
    const paths = asked.filter((b) => b.digests.some((d) => hit.has(d))).map((b) => b.path)
    throw new ExportError(
      `the archive holds content taken down on this instance: ${paths.slice(0, 5).join(', ')}${paths.length > 5 ? ` and ${paths.length - 5} more` : ''}`,
    )
  }
  await refuseTakenDown(db.k)
  // the lease spares the blobs stored below until the rows commit, however long a large
  // archive takes to store (a sweep of a server on the same database meanwhile: 313)
  return withBlobLease(db, async (lease) => {
    await lease.take()
    const blobPaths = new Set(need.map((b) => b.path))
    const stored = new Set<string>()
    // small entries are read whole and stored together when the store can (putBatch: one
    // durability step per batch); larger ones stream through put. A blob stored before a
    // failure is unreferenced either way (the sweeper's).
    const batch = createBlobBatch(blobs, (b) => stored.add(b.digest))
    for await (const e of entries(file)) {
      if (e.name === 'manifest.json' || e.name === 'data.json' || !blobPaths.has(e.name)) continue
      if (blobs.putBatch && e.size <= IMPORT_SMALL_BLOB) {
        await batch.add(await readEntry(e))
        continue
      }
      const b = await blobs.put(e.stream)
      stored.add(b.digest)
    }
    await batch.flush()
    for (const b of need) if (!stored.has(b.digest)) throw new ExportError(`the archive changed while it was imported (${b.path})`)

    if (lease.lapsed()) throw new ExportError('the blobs stored could not be kept while the archive was imported (their lease lapsed): import it again')
    const password = randomString(20)
    const hash = await hashPassword(password)
    const counts: Record<string, number> = {}
    const renamed: string[] = []
    const overQuota: ImportResult['overQuota'] = []
    const count = (t: string) => (counts[t] = (counts[t] ?? 0) + 1)
    await db.k
      .transaction()
      .execute(async (trx) => {
        const uid = newId()
        await trx
          .insertInto('users')
          .values({
            id: uid,
            username,
            password_hash: hash,
            tier: data.user.tier,
            disabled: 0,
            api_access: data.user.api_access ? 1 : 0,
            is_admin: 0,
            limits: data.user.limits,
            created_at: now,
            updated_at: now,
          })
          .execute()
        await db.lockUser(trx, uid)
        await refuseTakenDown(trx)
        for (const feature of data.user.entitlements)
          await trx.insertInto('entitlements').values({ user_id: uid, feature, source: 'import', created_at: now }).execute()
        const cols = (t: Table, r: Row): Row => Object.fromEntries(COLUMNS[t].map((c) => [c, r[c] ?? null]))
        for (const r of data.files) {
          await trx
            .insertInto('files')
            .values({ ...cols('files', r), id: newId(), user_id: uid } as never)
            .execute()
          count('files')
        }
        for (const f of data.folders) {
          const id = newId()
          await trx
            .insertInto('folders')
            .values({ ...cols('folders', f), id, user_id: uid, user_site: typeof data.user_site === 'string' && f.name === data.user_site ? 1 : 0 } as never)
            .execute()
          for (const r of f.files)
            await trx
              .insertInto('folder_files')
              .values({ ...cols('folder_files', r), folder_id: id } as never)
              .execute()
          // a published project is served from its live deploy: one deploy of the imported files
          if (Number(f.is_published) === 1) {
            const deployId = crypto.randomBytes(8).readBigUInt64BE().toString(36).padStart(13, '0').slice(-12)
            const at = Number(f.published_at ?? f.updated_at ?? Date.now())
            await sql`INSERT INTO deploys (id, folder_id, seq, created_at, file_count, bytes, message, source, is_preview, site_rules)
          SELECT ${deployId}, ${id}, 1, ${at}, COUNT(*), COALESCE(SUM(size), 0), 'import', 'api', 0, ${f.site_rules ?? null}
          FROM folder_files WHERE folder_id = ${id}`.execute(trx)
            await sql`INSERT INTO deploy_files (deploy_id, path, digest, size, content_type, updated_at)
          SELECT ${deployId}, path, digest, size, content_type, updated_at FROM folder_files WHERE folder_id = ${id}`.execute(trx)
            await trx.updateTable('folders').set({ live_deploy_id: deployId }).where('id', '=', id).execute()
          }
          count('folders')
        }
        for (const r of data.kv) {
          await trx
            .insertInto('kv_entries')
            .values({ ...cols('kv_entries', r), user_id: uid } as never)
            .execute()
          count('kv')
        }
        for (const key of [...new Set(data.forms.map((f) => String(f.slug_key)))].sort()) await formStore.lockSlug(db, trx, key)
        for (const f of data.forms) {
          const id = newId()
          const row = cols('forms', f)
          // a slug in use here, or held for another account (decision 264), gets a new one; one
          // held under the imported name (a deleted account restored) is taken back. Read under
          // the slug's lock, as a create does (the archive's slugs are locked in one order)
          const { used, heldBy: held } = await formStore.slugState(trx, String(row.slug_key))
          if (held?.username === username) await trx.deleteFrom('form_slugs_held').where('slug_key', '=', String(row.slug_key)).execute()
          if (used || (held !== null && held.username !== username)) {
            const slug = `${String(row.form_slug).slice(0, 55)}-${randomString(8).toLowerCase()}`
            renamed.push(`form ${String(row.form_slug)} -> ${slug}`)
            row.form_slug = slug
            row.slug_key = slug.toLowerCase()
          }
          await trx
            .insertInto('forms')
            .values({ ...row, id, user_id: uid } as never)
            .execute()
          for (const s of f.submissions) {
            const sid = newId()
            await trx
              .insertInto('form_submissions')
              .values({ ...cols('form_submissions', s), id: sid, form_id: id, user_id: uid } as never)
              .execute()
            for (const r of s.files ?? [])
              await trx
                .insertInto('form_files')
                .values({ ...cols('form_files', r), id: newId(), submission_id: sid, form_id: id, user_id: uid } as never)
                .execute()
          }
          count('forms')
        }
        const freeToken = async (table: 'images' | 'hosted_files', token: string, what: string) => {
          if (!(await trx.selectFrom(table).select('id').where('public_token', '=', token).executeTakeFirst())) return token
          const fresh = newPublicToken()
          renamed.push(`${what} link ${token} -> ${fresh}`)
          return fresh
        }
        for (const r of data.images) {
          const row = cols('images', r)
          row.public_token = await freeToken('images', String(row.public_token), 'image')
          await trx
            .insertInto('images')
            .values({ ...row, id: newId(), user_id: uid } as never)
            .execute()
          count('images')
        }
        for (const f of data.hosted_data) {
          const id = newId()
          const row = cols('hosted_files', f)
          row.public_token = await freeToken('hosted_files', String(row.public_token), 'data')
          await trx
            .insertInto('hosted_files')
            .values({ ...row, id, user_id: uid } as never)
            .execute()
          for (const v of f.versions)
            await trx
              .insertInto('hosted_versions')
              .values({ ...cols('hosted_versions', v), file_id: id } as never)
              .execute()
          await addUsage(trx, uid, versionsKind(id), f.versions.length)
          count('hosted_data')
        }
        // the quotas' counters start equal to the rows just inserted (same transaction)
        await addUsage(trx, uid, 'files', data.files.length)
        await addUsage(trx, uid, 'forms', data.forms.length)
        await addUsage(trx, uid, 'images', data.images.length)
        await addUsage(
          trx,
          uid,
          'image_bytes',
          data.images.reduce((a, r) => a + Number(r.size), 0),
        )
        await addUsage(trx, uid, 'hosted_files', data.hosted_data.length)
        // the KV counter with the versions the account retired, so none comes back (the store's
        // upsert: the larger retired version wins over a row already there)
        const retired = data.kv_retired_version ?? 0
        if (data.kv.length > 0 || retired > 0) await createKvStore(db).addKeys(trx, uid, data.kv.length, retired)
        // the account's sites as the disk holds them, against the limit it came with (or this
        // instance's default): past it, said, not refused
        const limit = quotaOf(data.user.limits, 'site_bytes')
        const used = await siteBytes(trx, uid)
        if (used > limit) overQuota.push({ quota: 'site_bytes', used, limit })
      })
      // rows of the right kinds the database still refuses (a key twice, a required column
      // null): the archive's fault, reported as the other checks are; the transaction wrote nothing
      .catch((e: unknown) => {
        if (e instanceof ExportError) throw e
        throw new ExportError(`data.json: rows this instance cannot store (${e instanceof Error ? e.message : String(e)})`)
      })
    return { username, password, counts, renamed, overQuota }
  })
}

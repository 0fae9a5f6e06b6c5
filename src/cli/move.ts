import fs from 'node:fs'
import path from 'node:path'
import SQLite from 'better-sqlite3'
import { sql } from 'kysely'
import type { Db } from '../db/kysely.js'
import { allMigrations, migrateToLatest, type MigrationSet } from '../db/migrate.js'
import type { BlobStore } from '../storage/blob-store.js'
import { DIGEST_RE } from '../storage/blob-store.js'
import { createLocalBlobStore, legacyBlobRel, localBlobRel } from '../storage/local.js'
import type { BlobColumn } from '../storage/sweeper.js'
import { ensureDataDir, SERVE_LOCK } from '../util/private-files.js'
import { BackupError, referencedDigests } from './backup.js'

/**
 * `svc move`: a whole SQLite instance (a data folder, offline) into PostgreSQL and the
 * configured blob store (docs/operations/scale-out.md, "Growing"). Invariants:
 * - the source is held with an exclusive lock for the whole move: a server running on it
 *   refuses the move, and none can start on it meanwhile (the copy is one consistent read);
 * - every refusal that needs no write (a blob missing from the source, a target that holds
 *   rows) comes before anything is written;
 * - the blobs are copied first, each hashed against its name, outside any transaction (as
 *   the service's writers do: blob, then the row); the rows then go in one PostgreSQL
 *   transaction, committed only when every table's row count matches the source's: an error
 *   commits no row, and the blobs already copied stay for the next run, which skips them;
 * - the tables come from the source's catalogue (a future table is covered), ordered by their
 *   foreign keys; each value is converted by the target column's type;
 * - after the commit, the rest of the data folder is named line by line: the self-signed
 *   certificate is copied into the target's DATA_DIR when its settings serve one, the rest
 *   (backups, caches, files that are not the service's) is said to stay.
 * `planMove` (--dry-run) makes the same reads and checks and writes nothing anywhere.
 */

export class MoveError extends BackupError {}

/** The refusal of a source folder without svc.db. */
export const noSource = (file: string) => new MoveError(`no database at ${file}: --from-data-dir names the data folder of the SQLite instance`)
/** The refusal of a source a server (or another command) has open. */
export const sourceInUse = (file: string) => new MoveError(`${file} is in use (a running svc serve?): stop it, then move; nothing was moved`)

/** How the new instances serve HTTPS, by the settings the move runs with (the new instances'). */
export type TargetTls = 'self-signed' | 'own' | 'proxy'

/** What the rest of the data folder needs of the target's settings. */
export interface FolderTarget {
  /** The target's DATA_DIR: where an instance keeps its self-signed certificate. */
  dataDir: string
  /** self-signed: neither TRUST_PROXY nor TLS_CERT/TLS_KEY (the certificate of DATA_DIR is served). */
  tls: TargetTls
  /** BACKUP_DIR of the settings, when set: named among what stays behind. */
  backupDir: string | null
}

interface SourceOptions {
  /** The source data folder: its svc.db. */
  fromDataDir: string
  /** The source's blob folder (DIR/blobs or its STORAGE_URL file:// folder). */
  fromBlobRoot: string
  sets: readonly MigrationSet[]
  blobColumns: readonly BlobColumn[]
  folder: FolderTarget
  /** Each line of the report as it happens. */
  log(line: string): void
}

export interface MoveOptions extends SourceOptions {
  /** The target: a PostgreSQL database, migrated here. */
  target: Db
  targetBlobs: BlobStore
  /** How errors name the target (no password, no query): shownDatabase, the store without its query. */
  shown?: { database: string; blobs: string }
}

export interface PlanOptions extends SourceOptions {
  /** The target database when its schema exists; null: the move would create it. */
  target: Db | null
  /** Whether the target store holds a blob: a read only (no folder is made). */
  targetHas(digest: string): Promise<boolean>
}

export interface MoveResult {
  tables: Array<{ table: string; rows: number }>
  blobs: { referenced: number; copied: number; copiedBytes: number; present: number }
  sequences: number
}

export interface MovePlan {
  tables: Array<{ table: string; rows: number }>
  blobs: { referenced: number; bytes: number; toCopy: number; toCopyBytes: number; present: number }
  /** Why the move would be refused; empty: it would run. */
  problems: string[]
}

/** Kysely's own bookkeeping: the target's migrations ran on it already. */
const BOOKKEEPING = new Set(['kysely_migration', 'kysely_migration_lock'])
/** Rows per INSERT, under PostgreSQL's 65535 parameters for any table width. */
const MAX_PARAMS = 30_000
const MAX_ROWS = 500

const quoteId = (s: string) => `"${s.replace(/"/g, '""')}"`

/**
 * Opens the source with an exclusive lock: refused at once when another connection (a running
 * server, an operator command) has it open.
 */
function lockSource(file: string): SQLite.Database {
  const db = new SQLite(file, { fileMustExist: true, timeout: 0 })
  try {
    db.pragma('locking_mode = EXCLUSIVE')
    db.exec('BEGIN EXCLUSIVE')
    return db
  } catch (e) {
    db.close()
    const code = (e as { code?: unknown }).code
    if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED')
      throw new MoveError(`${file} is in use (a running svc serve?): stop it, then move; nothing was moved`)
    throw new MoveError(`cannot read ${file}: ${(e as Error).message}; nothing was moved`)
  }
}

/** The source's tables, parents before the tables whose foreign keys point at them. */
function tablesInOrder(src: SQLite.Database): string[] {
  const names = (
    src.prepare(`select name from sqlite_master where type = 'table' and name not like 'sqlite\\_%' escape '\\' order by name`).all() as Array<{ name: string }>
  )
    .map((r) => r.name)
    .filter((n) => !BOOKKEEPING.has(n))
  const parents = new Map(
    names.map((n) => [
      n,
      new Set((src.prepare(`pragma foreign_key_list(${quoteId(n)})`).all() as Array<{ table: string }>).map((f) => f.table).filter((t) => t !== n)),
    ]),
  )
  const out: string[] = []
  const placed = new Set<string>()
  while (out.length < names.length) {
    const ready = names.filter((n) => !placed.has(n) && [...(parents.get(n) ?? [])].every((p) => placed.has(p) || !parents.has(p)))
    if (ready.length === 0) throw new MoveError(`the foreign keys of ${names.filter((n) => !placed.has(n)).join(', ')} form a cycle: no order copies them`)
    for (const n of ready) {
      placed.add(n)
      out.push(n)
    }
  }
  return out
}

/** What better-sqlite3 reads with safe integers. */
type SqliteValue = null | number | bigint | string | Buffer
type Convert = (v: SqliteValue) => unknown

/** A source value as the target column's type takes it (SQLite read with safe integers: bigint). */
function converter(table: string, column: string, type: string): Convert {
  const bad = (v: SqliteValue, what: string) =>
    new MoveError(
      `${table}.${column}: the value ${JSON.stringify(typeof v === 'bigint' ? String(v) : v)?.slice(0, 80)} is not ${what} (the target column is ${type})`,
    )
  const asText = (v: SqliteValue): string => {
    let s: string
    if (Buffer.isBuffer(v)) {
      try {
        s = new TextDecoder('utf-8', { fatal: true }).decode(v)
      } catch {
        throw bad(v, 'UTF-8 text')
      }
    } else s = String(v)
    // PostgreSQL text holds no NUL character
    if (s.includes('\u0000')) throw bad(v, 'text without a NUL character')
    return s
  }
  switch (type) {
    case 'smallint':
    case 'integer':
    case 'bigint':
      return (v) => {
        if (v === null || typeof v === 'bigint') return v
        if (typeof v === 'number' && Number.isInteger(v)) return v
        if (typeof v === 'string' && /^-?\d+$/.test(v.trim())) return v.trim()
        throw bad(v, 'an integer')
      }
    case 'numeric':
    case 'real':
    case 'double precision':
      return (v) => {
        if (v === null || typeof v === 'bigint' || typeof v === 'number') return v
        if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return v.trim()
        throw bad(v, 'a number')
      }
    case 'boolean':
      return (v) => {
        if (v === null) return v
        if (typeof v === 'bigint' || typeof v === 'number') return Number(v) !== 0
        if (typeof v === 'string' && /^(0|1|true|false)$/i.test(v)) return /^(1|true)$/i.test(v)
        throw bad(v, 'a boolean')
      }
    case 'bytea':
      return (v) => (v === null || Buffer.isBuffer(v) ? v : Buffer.from(String(v), 'utf8'))
    case 'json':
    case 'jsonb':
      return (v) => {
        if (v === null) return v
        const s = asText(v)
        try {
          JSON.parse(s)
        } catch {
          throw bad(v, 'JSON')
        }
        return s
      }
    case 'timestamp with time zone':
    case 'timestamp without time zone':
    case 'date':
      // the service keeps times as epoch milliseconds; a text time goes as it is
      return (v) => (typeof v === 'bigint' || typeof v === 'number' ? new Date(Number(v)) : v === null ? v : asText(v))
    case 'text':
    case 'character varying':
    case 'character':
      return (v) => (v === null ? v : asText(v))
    default:
      return (v) => v
  }
}

/** PostgreSQL, its address without a password: what the report names. */
export function shownDatabase(url: string): string {
  const u = new URL(url)
  const schema = u.searchParams.get('schema')
  return `${u.protocol}//${u.username ? `${u.username}@` : ''}${u.host}${u.pathname}${schema ? ` (schema ${schema})` : ''}`
}

/** The source, locked and checked: its tables in copy order and the blobs its rows reference. */
interface Source {
  src: SQLite.Database
  file: string
  order: string[]
  /** The migrations of this release (the source ran exactly these). */
  known: string[]
  /** Each referenced digest once, sorted, with the first column naming it. */
  blobs: Array<{ digest: string; table: string; column: string }>
}

/** Opens and checks the source (MoveError when it cannot move); the caller calls closeSource. */
function openSource(o: SourceOptions): Source {
  const file = path.join(o.fromDataDir, 'svc.db')
  if (!fs.existsSync(file)) throw noSource(file)
  const src = lockSource(file)
  try {
    const check = src.pragma('quick_check', { simple: true })
    if (check !== 'ok') throw new MoveError(`${file} fails its integrity check (${String(check)}); nothing was moved`)
    // the source must be at this release's schema: its columns are then the target's
    const known = Object.keys(allMigrations(o.sets))
    const ran = new Set(
      (src.prepare(`select count(*) as n from sqlite_master where name = 'kysely_migration'`).get() as { n: number }).n > 0
        ? (src.prepare('select name from kysely_migration').all() as Array<{ name: string }>).map((r) => r.name)
        : [],
    )
    const newer = [...ran].filter((n) => !known.includes(n))
    if (newer.length > 0)
      throw new MoveError(`${file} ran migrations this release does not know (${newer.join(', ')}): move it with that release or a later one`)
    const behind = known.filter((n) => !ran.has(n))
    if (behind.length > 0) {
      throw new MoveError(
        `${file} lacks ${behind.length} migration${behind.length === 1 ? '' : 's'} of this release (${behind[0]}${behind.length > 1 ? ', ...' : ''}): run DATA_DIR=${o.fromDataDir} svc migrate first`,
      )
    }
    const first = new Map<string, { digest: string; table: string; column: string }>()
    for (const d of referencedDigests(src, o.blobColumns)) if (!first.has(d.digest)) first.set(d.digest, d)
    const blobs = [...first.values()].sort((x, y) => (x.digest < y.digest ? -1 : x.digest > y.digest ? 1 : 0))
    return { src, file, order: tablesInOrder(src), known, blobs }
  } catch (e) {
    closeSource(src)
    throw e
  }
}

function closeSource(src: SQLite.Database): void {
  try {
    src.exec('ROLLBACK')
  } catch {}
  src.close()
}

const rowCount = (src: SQLite.Database, table: string): number => Number((src.prepare(`select count(*) as n from ${quoteId(table)}`).get() as { n: number }).n)

/** A blob's size in a local blob folder (either layout), without opening a store (which makes folders); null: not there. */
export function localBlobSize(root: string, digest: string): number | null {
  for (const rel of [localBlobRel(digest), legacyBlobRel(digest)]) {
    try {
      return fs.statSync(path.join(root, rel)).size
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e
    }
  }
  return null
}

/** Why the source's blobs cannot move, each a sentence; and the size of each that can. */
function checkSourceBlobs(o: SourceOptions, blobs: Source['blobs']): { problems: string[]; sizes: Map<string, number> } {
  const problems: string[] = []
  const sizes = new Map<string, number>()
  for (const b of blobs) {
    if (!DIGEST_RE.test(b.digest)) {
      problems.push(`${b.table}.${b.column} holds a malformed blob digest "${b.digest}"`)
      continue
    }
    const size = localBlobSize(o.fromBlobRoot, b.digest)
    if (size === null) problems.push(`blob ${b.digest} (${b.table}.${b.column}) is missing from the source's blobs`)
    else sizes.set(b.digest, size)
  }
  return { problems, sizes }
}

/** What the target database holds, by reads only: whether it has accounts, and the tables of `order` with rows. */
async function inspectTarget(db: Db, order: readonly string[]): Promise<{ accounts: boolean; held: string[]; tables: Set<string>; ran: string[] }> {
  const tables = new Set(
    (await sql<{ table_name: string }>`select table_name from information_schema.tables where table_schema = current_schema()`.execute(db.k)).rows.map(
      (r) => r.table_name,
    ),
  )
  const held: string[] = []
  for (const t of order.filter((n) => tables.has(n))) {
    const r = await sql<{ any: boolean }>`select exists (select 1 from ${sql.table(t)}) as any`.execute(db.k)
    if (r.rows[0]?.any) held.push(t)
  }
  const ran = tables.has('kysely_migration') ? (await sql<{ name: string }>`select name from kysely_migration`.execute(db.k)).rows.map((r) => r.name) : []
  return { accounts: held.includes('users'), held, tables, ran }
}

const holdsAccounts = 'the target database is not empty (it holds accounts): move into a database or schema that only ran the migrations'
const holdsRows = (held: string[]) =>
  `the target database is not empty (rows in ${held.join(', ')}): move into a database or schema that only ran the migrations`

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`

/** Why a call failed, in words: a storage error's cause (the S3 SDK's or the file system's), else its own message. */
function reason(e: unknown): string {
  const cause = (e as { cause?: unknown }).cause
  const text = cause instanceof Error && cause.message !== '' ? cause.message : e instanceof Error ? e.message : String(e)
  return text.replace(/\s+/g, ' ').slice(0, 300)
}

/** Node's codes of a connection refused, cut, timed out or not found. */
const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN'])

/**
 * Whether a database error says the server went away (the connection refused or cut, the
 * server shutting down) rather than answering: pg's own words for a lost connection, Node's
 * codes, or SQLSTATE class 08 and 57P01-57P03. A refusal PostgreSQL answered (a constraint, a
 * type) carries another SQLSTATE and is no such error.
 */
function connectionLost(e: unknown): boolean {
  const code = (e as { code?: unknown }).code
  if (typeof code === 'string') return CONNECTION_CODES.has(code) || code.startsWith('08') || /^57P0[123]$/.test(code)
  const message = e instanceof Error ? e.message : ''
  return /^Connection terminated|not queryable|timeout exceeded when trying to connect|Query read timeout/.test(message)
}

/** Moves the instance; throws MoveError (no row committed) when anything fails. */
export async function moveSqliteToPostgres(o: MoveOptions): Promise<MoveResult> {
  if (o.target.engine !== 'postgres') throw new MoveError('svc move writes into PostgreSQL: set DATABASE_URL')
  const { src, order, blobs } = openSource(o)
  const result: MoveResult = { tables: [], blobs: { referenced: blobs.length, copied: 0, copiedBytes: 0, present: 0 }, sequences: 0 }
  let fromBlobs: BlobStore | null = null
  try {
    fromBlobs = createLocalBlobStore(o.fromBlobRoot)
    await copyAll(o, src, order, blobs, fromBlobs, result)
    const rows = result.tables.reduce((n, t) => n + t.rows, 0)
    o.log(
      `verified and committed: ${result.tables.length} tables, ${rows} rows (each table's count matches the source), ${result.blobs.referenced} blobs, ${result.sequences} sequences set`,
    )
    // 3. the rest of the data folder (the rows are committed: a problem here is a line, not a failure)
    try {
      for (const line of restOfFolder(o, customDomains(src), 'move')) o.log(line)
    } catch (e) {
      o.log(`the rest of the data folder: cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); look at ${o.fromDataDir} by hand`)
    }
    return result
  } finally {
    await fromBlobs?.close().catch(() => {})
    closeSource(src)
  }
}

/** The blobs, then the rows in one transaction: moveSqliteToPostgres's writes. */
async function copyAll(o: MoveOptions, src: SQLite.Database, order: string[], blobs: Source['blobs'], fromBlobs: BlobStore, result: MoveResult): Promise<void> {
  try {
    // 0. every refusal that needs no write, before the first one
    const scan = checkSourceBlobs(o, blobs)
    if (scan.problems.length > 0) throw new MoveError(`${scan.problems[0]}; nothing was moved`)
    // a target that holds accounts is refused before its migrations run on it
    if ((await inspectTarget(o.target, order)).accounts) throw new MoveError(`${holdsAccounts}; nothing was moved`)
    const applied = await migrateToLatest(o.target, o.sets)
    if (applied.length > 0) o.log(`target: applied ${applied.length} migrations`)
    const columns = new Map<string, Map<string, string>>()
    /** Tables with a GENERATED ALWAYS identity column: their inserts override it with the moved values. */
    const always = new Set<string>()
    for (const r of (
      await sql<{
        table_name: string
        column_name: string
        data_type: string
        identity_generation: string | null
      }>`select table_name, column_name, data_type, identity_generation from information_schema.columns where table_schema = current_schema()`.execute(
        o.target.k,
      )
    ).rows) {
      if (!columns.has(r.table_name)) columns.set(r.table_name, new Map())
      columns.get(r.table_name)!.set(r.column_name, r.data_type)
      if (r.identity_generation === 'ALWAYS') always.add(r.table_name)
    }
    const missing = order.filter((t) => !columns.has(t))
    if (missing.length > 0) throw new MoveError(`the target has no table ${missing.join(', ')}, which the source holds; nothing was moved`)
    for (const t of order) {
      const absent = (src.prepare(`pragma table_info(${quoteId(t)})`).all() as Array<{ name: string }>)
        .map((c) => c.name)
        .filter((c) => !columns.get(t)!.has(c))
      if (absent.length > 0) throw new MoveError(`${t}: the target table has no column ${absent.join(', ')}; nothing was moved`)
    }
    const held = (await inspectTarget(o.target, order)).held
    if (held.length > 0) throw new MoveError(`${holdsRows(held)}; nothing was moved`)

    // 1. every referenced blob, into the target store, its bytes hashed on the way; one the
    // target holds already (a run that failed after copying it) is kept: named by its content
    const referenced = new Set(blobs.map((b) => b.digest))
    const blobsName = o.shown?.blobs ?? '(STORAGE_URL)'
    /** A call of the target store; its failure names the store (a bucket gone away, a full disk). */
    const inStore = <T>(call: () => Promise<T>): Promise<T> =>
      call().catch((e: unknown) => {
        throw new MoveError(`the move failed: the target blob store ${blobsName} failed (${reason(e)}); no row was committed`, { cause: e })
      })
    for (const { digest } of blobs) {
      if (await inStore(() => o.targetBlobs.exists(digest))) {
        result.blobs.present++
        continue
      }
      const body = await fromBlobs.get(digest)
      const stored = await inStore(() => o.targetBlobs.put(body))
      if (stored.digest !== digest) {
        // stored under the hash of its bytes: not a blob of this move unless another row names it
        if (!referenced.has(stored.digest)) await o.targetBlobs.delete(stored.digest).catch(() => false)
        throw new MoveError(`blob ${digest}: its bytes in the source hash to ${stored.digest} (damaged); no row was moved`)
      }
      result.blobs.copied++
      result.blobs.copiedBytes += stored.size
    }
    o.log(
      `blobs: ${blobs.length} referenced, ${result.blobs.copied} copied (${result.blobs.copiedBytes} bytes), ${result.blobs.present} already in the target; each digest verified`,
    )

    // 2. the rows, in one transaction
    await o.target.k.transaction().execute(async (trx) => {
      // writers wait (readers do not) until the move commits or rolls back: no row can appear
      // between the emptiness check and the commit
      await sql`set local lock_timeout = '10s'`.execute(trx)
      await sql`lock table ${sql.join(order.map((t) => sql.table(t)))} in exclusive mode`.execute(trx)
      const held: string[] = []
      for (const t of order) {
        const r = await sql<{ any: boolean }>`select exists (select 1 from ${sql.table(t)}) as any`.execute(trx)
        if (r.rows[0]?.any) held.push(t)
      }
      if (held.length > 0) throw new MoveError(`${holdsRows(held)}; no row was moved`)

      for (const t of order) {
        const target = columns.get(t)!
        const cols = (src.prepare(`pragma table_info(${quoteId(t)})`).all() as Array<{ name: string }>).map((c) => c.name)
        const convert = cols.map((c) => converter(t, c, target.get(c)!))
        const per = Math.max(1, Math.min(MAX_ROWS, Math.floor(MAX_PARAMS / Math.max(1, cols.length))))
        const stmt = src
          .prepare(`select ${cols.map(quoteId).join(', ')} from ${quoteId(t)}`)
          .raw(true)
          .safeIntegers(true)
        let batch: unknown[][] = []
        let rows = 0
        const flush = async () => {
          if (batch.length === 0) return
          const values = batch.map((r) => sql`(${sql.join(r.map((v) => sql`${v}`))})`)
          const override = always.has(t) ? sql` overriding system value` : sql``
          await sql`insert into ${sql.table(t)} (${sql.join(cols.map((c) => sql.id(c)))})${override} values ${sql.join(values)}`.execute(trx)
          batch = []
        }
        for (const raw of stmt.iterate() as Iterable<unknown[]>) {
          batch.push(raw.map((v, i) => convert[i](v as SqliteValue)))
          rows++
          if (batch.length >= per) await flush()
        }
        await flush()
        result.tables.push({ table: t, rows })
        o.log(`  ${t}: ${plural(rows, 'row')}`)
      }

      // the serial and identity columns continue after the moved rows
      const serials = await sql<{ table_name: string; column_name: string; seq: string | null }>`
        select table_name, column_name, pg_get_serial_sequence(quote_ident(table_name), column_name) as seq
        from information_schema.columns
        where table_schema = current_schema() and (column_default like 'nextval(%' or is_identity = 'YES')`.execute(trx)
      for (const s of serials.rows) {
        if (s.seq === null || BOOKKEEPING.has(s.table_name)) continue
        await sql`select setval(${s.seq}, coalesce((select max(${sql.ref(s.column_name)}) from ${sql.table(s.table_name)}), 0) + 1, false)`.execute(trx)
        result.sequences++
      }

      // verify: every table holds the source's row count
      const wrong: string[] = []
      for (const { table, rows } of result.tables) {
        const r = await sql<{ n: string | number }>`select count(*) as n from ${sql.table(table)}`.execute(trx)
        if (Number(r.rows[0]?.n) !== rows) wrong.push(`${table} (${String(r.rows[0]?.n)} rows, the source ${rows})`)
      }
      if (wrong.length > 0) throw new MoveError(`the target's row counts differ from the source's: ${wrong.join(', ')}; no row was moved`)
    })
  } catch (e) {
    // the blobs in the target stay: the next run skips them (they are named by their content)
    const inTarget = result.blobs.copied + result.blobs.present
    const kept =
      inTarget === 0
        ? ''
        : `; the ${plural(inTarget, 'blob')} copied so far stay${inTarget === 1 ? 's' : ''} in the target store: run the same command again once fixed, it keeps ${inTarget === 1 ? 'it' : 'them'} and copies the rest (to give up the move instead, svc sweep with the target's settings deletes ${inTarget === 1 ? 'it' : 'them'} an hour after the copy)`
    if (e instanceof MoveError) throw new MoveError(`${e.message}${kept}`, { cause: e.cause })
    // the database gone away (a cut connection, a restart): named, as the store is
    if (connectionLost(e))
      throw new MoveError(
        `the move failed: the target database ${o.shown?.database ?? '(DATABASE_URL)'} cannot be reached (${reason(e)}); no row was committed${kept}`,
        { cause: e },
      )
    throw new MoveError(`the move failed: ${(e as Error).message}; no row was committed${kept}`, { cause: e })
  }
}

/** Verified custom domains of the source: their certificates are the TLS proxy's. */
function customDomains(src: SQLite.Database): number {
  const has = (src.prepare(`select count(*) as n from sqlite_master where type = 'table' and name = 'domains'`).get() as { n: number }).n > 0
  return has ? Number((src.prepare('select count(*) as n from domains where verified_at is not null').get() as { n: number }).n) : 0
}

/** The self-signed certificate's two files, at the top of a data folder. */
const CERT_FILES = ['tls-cert.pem', 'tls-key.pem'] as const
/** What the service keeps in a data folder that a stopped instance no longer needs. */
const NOT_NEEDED: Record<string, string> = { 'blob-cache': 'a cache of the bucket', tmp: 'uploads in flight when it stopped', [SERVE_LOCK]: 'a lock' }

const sameFile = (a: string, b: string) => {
  try {
    return fs.readFileSync(a).equals(fs.readFileSync(b))
  } catch {
    return false
  }
}

/**
 * The data folder besides svc.db and its blobs, one line each: the self-signed certificate is
 * copied into the target's DATA_DIR when the target's settings serve it (`mode` 'move'; 'plan'
 * says what would happen), everything else is named with where it stays and what to do.
 */
function restOfFolder(o: SourceOptions, domains: number, mode: 'move' | 'plan'): string[] {
  const lines: string[] = ['the rest of the data folder:']
  const from = path.resolve(o.fromDataDir)
  const to = path.resolve(o.folder.dataDir)
  const blobRoot = path.resolve(o.fromBlobRoot)
  const would = (done: string, planned: string) => (mode === 'move' ? done : planned)

  const names = fs.readdirSync(from).sort()
  // the certificate
  const certs = CERT_FILES.filter((f) => names.includes(f))
  if (certs.length > 0) {
    const what = `${certs.join(', ')} (the self-signed certificate)`
    const targets = CERT_FILES.map((f) => path.join(to, f))
    if (certs.length < CERT_FILES.length) lines.push(`  ${what}: not copied, its pair is missing (an instance makes a new certificate on start)`)
    else if (o.folder.tls !== 'self-signed') {
      lines.push(
        `  ${what}: not copied, the new instances' settings serve ${o.folder.tls === 'own' ? 'TLS_CERT and TLS_KEY' : "the proxy's certificate (TRUST_PROXY=1)"}`,
      )
    } else if (to === from) lines.push(`  ${what}: stays, DATA_DIR is this folder`)
    else if (targets.every((t, i) => sameFile(path.join(from, CERT_FILES[i]), t))) lines.push(`  ${what}: already in DATA_DIR ${to}`)
    else if (targets.some((t) => fs.existsSync(t))) {
      lines.push(
        `  ${what}: not copied, DATA_DIR ${to} holds another certificate (kept); to serve the old one, copy ${CERT_FILES.map((f) => path.join(from, f)).join(' and ')} over it`,
      )
    } else if (mode === 'plan') lines.push(`  ${what}: would be copied into DATA_DIR ${to}`)
    else {
      try {
        ensureDataDir(to)
        // the key first, for its owner only; the certificate last: an instance uses the pair only when both are there
        fs.copyFileSync(path.join(from, 'tls-key.pem'), targets[1], fs.constants.COPYFILE_EXCL)
        fs.chmodSync(targets[1], 0o600)
        fs.copyFileSync(path.join(from, 'tls-cert.pem'), targets[0], fs.constants.COPYFILE_EXCL)
        lines.push(`  ${what}: copied into DATA_DIR ${to}; an instance with another DATA_DIR needs both files copied into it`)
      } catch (e) {
        lines.push(
          `  ${what}: could not be copied into DATA_DIR ${to} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}): copy both files into it by hand`,
        )
      }
    }
  }
  // the pre-migration copies (and svc backup's snapshots, when it was given this folder)
  if (names.includes('backups')) {
    let inside: string[] = []
    try {
      inside = fs.readdirSync(path.join(from, 'backups'))
    } catch {
      // not a folder, or unreadable: named all the same
    }
    const copies = inside.filter((n) => n.startsWith('pre-migrate-')).length
    const others = inside.length - copies
    lines.push(
      `  backups/ (${plural(copies, 'copy', 'copies')} of svc.db taken before migrations${others > 0 ? `, ${plural(others, 'other entry', 'other entries')}: svc backup's, if it was given this folder` : ''}): ${would('not moved', 'would not move')}; they restore into a SQLite data folder only: keep them with this folder`,
    )
  }
  // what a stopped instance does not need
  const skip = new Set<string>(['svc.db', 'svc.db-wal', 'svc.db-shm', 'backups', ...CERT_FILES])
  const unneeded = names.filter((n) => Object.hasOwn(NOT_NEEDED, n) || /^\..+\.lock$/.test(n))
  if (unneeded.length > 0) {
    lines.push(
      `  ${unneeded.map((n) => (Object.hasOwn(NOT_NEEDED, n) && n !== SERVE_LOCK ? `${n}/` : n)).join(', ')}: not needed (${[...new Set(unneeded.map((n) => NOT_NEEDED[n] ?? 'a lock'))].join(', ')})`,
    )
  }
  const others = names.filter((n) => !skip.has(n) && !unneeded.includes(n) && path.join(from, n) !== blobRoot)
  if (others.length > 0) {
    lines.push(
      `  ${others.join(', ')}: not the service's, ${would('not moved', 'would not move')}: copy ${others.length === 1 ? 'it' : 'them'} by hand if the new instances need ${others.length === 1 ? 'it' : 'them'}`,
    )
  }
  if (lines.length === 1) lines.push('  nothing else')
  lines.push(
    `backups made by svc backup${o.folder.backupDir ? ` (BACKUP_DIR ${o.folder.backupDir})` : ''}: ${would('not moved', 'would not move')}; they restore into a SQLite data folder only (svc restore): keep them to go back; back up the new instances with scripts/backup-postgres.sh (docs/operations/backups.md)`,
  )
  if (domains > 0) {
    lines.push(
      `custom domains: ${domains} verified, ${would('moved', 'would move')} with the rows; their certificates are the TLS proxy's (its own storage, not this folder): keep the proxy, pointed at the new instances, or a new one obtains them again at the first visit (docs/operations/proxy-tls.md)`,
    )
  }
  return lines
}

/**
 * `svc move --dry-run`: what the move would do, by reads only (the source under the same
 * lock, the target's catalogue when its schema exists, the target store's blobs one by one),
 * and every refusal the move would make before writing (MoveError once the report is out).
 */
export async function planMove(o: PlanOptions): Promise<MovePlan> {
  const { src, order, known, blobs } = openSource(o)
  try {
    const problems: string[] = []
    if (o.target === null) o.log(`target: a new schema; the move would create it and run ${plural(known.length, 'migration')}`)
    else {
      const t = await inspectTarget(o.target, order)
      if (t.held.length > 0) {
        problems.push(t.accounts ? holdsAccounts : holdsRows(t.held))
        o.log(`target: ${problems[0]}`)
      } else o.log(`target: empty; the move would run ${plural(known.filter((n) => !t.ran.includes(n)).length, 'migration')}`)
    }
    const plan: MovePlan = { tables: [], blobs: { referenced: blobs.length, bytes: 0, toCopy: 0, toCopyBytes: 0, present: 0 }, problems }
    for (const t of order) {
      const rows = rowCount(src, t)
      plan.tables.push({ table: t, rows })
      o.log(`  ${t}: ${plural(rows, 'row')}`)
    }
    const scan = checkSourceBlobs(o, blobs)
    problems.push(...scan.problems)
    for (const [digest, size] of scan.sizes) {
      plan.blobs.bytes += size
      if (await o.targetHas(digest)) plan.blobs.present++
      else {
        plan.blobs.toCopy++
        plan.blobs.toCopyBytes += size
      }
    }
    o.log(
      `blobs: ${blobs.length} referenced (${plan.blobs.bytes} bytes), ${plan.blobs.toCopy} to copy (${plan.blobs.toCopyBytes} bytes), ${plan.blobs.present} already in the target${scan.problems.length > 0 ? `, ${scan.problems.length} that cannot move` : ''}`,
    )
    for (const line of restOfFolder(o, customDomains(src), 'plan')) o.log(line)
    if (problems.length > 0) throw new MoveError(`dry run: the move would be refused: ${problems.join('; ')}; nothing was written`)
    return plan
  } finally {
    closeSource(src)
  }
}

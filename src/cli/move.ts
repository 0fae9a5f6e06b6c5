import fs from 'node:fs'
import path from 'node:path'
import SQLite from 'better-sqlite3'
import { sql } from 'kysely'
import type { Db } from '../db/kysely.js'
import { allMigrations, migrateToLatest, type MigrationSet } from '../db/migrate.js'
import type { BlobStore } from '../storage/blob-store.js'
import { DIGEST_RE } from '../storage/blob-store.js'
import type { BlobColumn } from '../storage/sweeper.js'
import { BackupError, referencedDigests } from './backup.js'

/**
 * `svc move`: a whole SQLite instance (a data folder, offline) into PostgreSQL and the
 * configured blob store (docs/operations/scale-out.md, "Growing"). Invariants:
 * - the source is held with an exclusive lock for the whole move: a server running on it
 *   refuses the move, and none can start on it meanwhile (the copy is one consistent read);
 * - every row is written in one PostgreSQL transaction, committed only after every blob the
 *   rows reference is in the target store with its bytes hashing to its name, and every
 *   table's row count matches the source's: an error commits nothing;
 * - the tables come from the source's catalogue (a future table is covered), ordered by their
 *   foreign keys; each value is converted by the target column's type.
 */

export class MoveError extends BackupError {}

/** The refusal of a source folder without svc.db. */
export const noSource = (file: string) => new MoveError(`no database at ${file}: --from-data-dir names the data folder of the SQLite instance`)
/** The refusal of a source a server (or another command) has open. */
export const sourceInUse = (file: string) => new MoveError(`${file} is in use (a running svc serve?): stop it, then move; nothing was moved`)

export interface MoveOptions {
  /** The source data folder: its svc.db. */
  fromDataDir: string
  /** The source's blobs (a local blob store: DIR/blobs or its STORAGE_URL file:// folder). */
  fromBlobs: BlobStore
  /** The target: a PostgreSQL database, migrated here. */
  target: Db
  targetBlobs: BlobStore
  sets: readonly MigrationSet[]
  blobColumns: readonly BlobColumn[]
  /** Each line of the report as it happens. */
  log(line: string): void
}

export interface MoveResult {
  tables: Array<{ table: string; rows: number }>
  blobs: { referenced: number; copied: number; copiedBytes: number; present: number }
  sequences: number
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

/** Moves the instance; throws MoveError (nothing committed) when anything fails. */
export async function moveSqliteToPostgres(o: MoveOptions): Promise<MoveResult> {
  if (o.target.engine !== 'postgres') throw new MoveError('svc move writes into PostgreSQL: set DATABASE_URL')
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
    const order = tablesInOrder(src)
    const digests = referencedDigests(src, o.blobColumns)

    // a target that holds accounts is refused before its migrations run on it
    const users = await sql<{
      n: number
    }>`select count(*)::int as n from information_schema.tables where table_schema = current_schema() and table_name = 'users'`.execute(o.target.k)
    if (users.rows[0]?.n === 1 && (await sql<{ any: boolean }>`select exists (select 1 from users) as any`.execute(o.target.k)).rows[0]?.any) {
      throw new MoveError(
        'the target database is not empty (it holds accounts): move into a database or schema that only ran the migrations; nothing was moved',
      )
    }
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

    const result: MoveResult = { tables: [], blobs: { referenced: 0, copied: 0, copiedBytes: 0, present: 0 }, sequences: 0 }
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
      if (held.length > 0) {
        throw new MoveError(
          `the target database is not empty (rows in ${held.join(', ')}): move into a database or schema that only ran the migrations; nothing was moved`,
        )
      }

      // 1. the rows, table by table
      for (const t of order) {
        const target = columns.get(t)!
        const cols = (src.prepare(`pragma table_info(${quoteId(t)})`).all() as Array<{ name: string }>).map((c) => c.name)
        const absent = cols.filter((c) => !target.has(c))
        if (absent.length > 0) throw new MoveError(`${t}: the target table has no column ${absent.join(', ')}; nothing was moved`)
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
        o.log(`  ${t}: ${rows} row${rows === 1 ? '' : 's'}`)
      }

      // 2. the serial and identity columns continue after the moved rows
      const serials = await sql<{ table_name: string; column_name: string; seq: string | null }>`
        select table_name, column_name, pg_get_serial_sequence(quote_ident(table_name), column_name) as seq
        from information_schema.columns
        where table_schema = current_schema() and (column_default like 'nextval(%' or is_identity = 'YES')`.execute(trx)
      for (const s of serials.rows) {
        if (s.seq === null || BOOKKEEPING.has(s.table_name)) continue
        await sql`select setval(${s.seq}, coalesce((select max(${sql.ref(s.column_name)}) from ${sql.table(s.table_name)}), 0) + 1, false)`.execute(trx)
        result.sequences++
      }

      // 3. every referenced blob, into the target store, its bytes hashed on the way
      const first = new Map<string, { table: string; column: string }>()
      for (const d of digests) if (!first.has(d.digest)) first.set(d.digest, d)
      const unique = [...first.keys()].sort()
      result.blobs.referenced = unique.length
      for (const digest of unique) {
        const where = first.get(digest)!
        if (!DIGEST_RE.test(digest)) throw new MoveError(`${where.table}.${where.column} holds a malformed blob digest "${digest}"; nothing was moved`)
        if (await o.targetBlobs.exists(digest)) {
          result.blobs.present++
          continue
        }
        if (!(await o.fromBlobs.exists(digest))) {
          throw new MoveError(`blob ${digest} (${where.table}.${where.column}) is missing from the source's blobs; nothing was moved`)
        }
        const stored = await o.targetBlobs.put(await o.fromBlobs.get(digest))
        if (stored.digest !== digest) throw new MoveError(`blob ${digest}: its bytes in the source hash to ${stored.digest} (damaged); nothing was moved`)
        result.blobs.copied++
        result.blobs.copiedBytes += stored.size
      }
      o.log(
        `blobs: ${unique.length} referenced, ${result.blobs.copied} copied (${result.blobs.copiedBytes} bytes), ${result.blobs.present} already in the target; each digest verified`,
      )

      // 4. verify: every table holds the source's row count
      const wrong: string[] = []
      for (const { table, rows } of result.tables) {
        const r = await sql<{ n: string | number }>`select count(*) as n from ${sql.table(table)}`.execute(trx)
        if (Number(r.rows[0]?.n) !== rows) wrong.push(`${table} (${String(r.rows[0]?.n)} rows, the source ${rows})`)
      }
      if (wrong.length > 0) throw new MoveError(`the target's row counts differ from the source's: ${wrong.join(', ')}; nothing was moved`)
    })
    return result
  } catch (e) {
    if (e instanceof MoveError) throw e
    throw new MoveError(`the move failed: ${(e as Error).message}; nothing was committed`, { cause: e })
  } finally {
    try {
      src.exec('ROLLBACK')
    } catch {}
    src.close()
  }
}

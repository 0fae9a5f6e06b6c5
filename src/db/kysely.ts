import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import SQLite from 'better-sqlite3'
import type { default as Pg } from 'pg'
import {
  Kysely,
  PostgresDialect,
  PostgresIntrospector,
  sql,
  type DatabaseIntrospector,
  type DatabaseMetadataOptions,
  type TableMetadata,
  type Transaction,
  type LogEvent,
  type PostgresPool,
  type PostgresPoolClient,
} from 'kysely'
import type { Database } from './schema.js'
import { DurabilityBarrier, walSyncer } from './durability.js'
import { Checkpointer } from './checkpointer.js'
import { WriterDialect } from './sqlite-writer.js'
import { lazy } from '../util/lazy.js'
import { ensureDataDir, privateDatabaseFile } from '../util/private-files.js'

export type Engine = 'sqlite' | 'postgres'
export type DB = Kysely<Database>
export type Trx = Transaction<Database>

/** A database handle: the Kysely instance plus the few things that differ per engine. */
export interface Db {
  k: DB
  engine: Engine
  /** PostgreSQL schema named in DATABASE_URL (?schema=), if any. */
  schema?: string
  /** Serialises writers that check a per-user quota: row lock on PostgreSQL (SQLite transactions are already exclusive). */
  lockUser(trx: Trx, userId: string): Promise<void>
  /**
   * Serialises the transactions that take the lock `name` until each ends: a PostgreSQL
   * advisory transaction lock, per schema (SQLite transactions are already exclusive).
   */
  lockName(trx: Trx, name: string): Promise<void>
  /** SQLite: the group commit every write waits on (tests inject a failing sync through it). */
  barrier?: DurabilityBarrier
  /**
   * PostgreSQL: from now on, runs this SQL text as a named (server-side prepared) statement,
   * parsed and planned once per connection (db/prepared.ts registers its fixed-shape queries).
   * SQLite has no need: its one connection keeps every statement prepared.
   */
  prepare?(sql: string): void
  /**
   * SQLite: a stamp that changes whenever rows of `tables` may have changed, by a write of this
   * process or a commit of another (sqlite-writer.ts changeStamp), so a reader may keep such
   * rows while it is unchanged. PostgreSQL: absent, as other instances write with no notice.
   */
  changeStamp?(tables: readonly string[]): () => number
  /**
   * Runs `fn` holding the lock `name` across every process on this database (instances,
   * operator commands), or returns `{ held: false }` at once when another holder has it.
   * PostgreSQL: an advisory lock of the transaction that stays open while `fn` runs (released
   * with it, even when the connection drops), per schema. SQLite: a file beside svc.db naming
   * the holder's pid (one left by a dead process is taken over).
   */
  tryLock<T>(name: string, fn: () => Promise<T>): Promise<{ held: true; value: T } | { held: false }>
  close(): Promise<void>
}

/** pg, loaded when a PostgreSQL database is opened (a SQLite install never loads it). */
const loadPg = lazy(async (): Promise<typeof Pg> => {
  const { default: pg } = await import('pg')
  // int8 (bigint) as JS numbers: all our bigints are epoch milliseconds or byte counts (< 2^53)
  pg.types.setTypeParser(20, (v: string) => Number(v))
  return pg
})

export interface DbOptions {
  databaseUrl: string | null
  dataDir: string
  /** Called for every failed query (the server counts them for /metrics; admin commands pass nothing). */
  onQueryError?: QueryErrorObserver
  /**
   * PostgreSQL: a query unanswered this long fails (the request answers 503 instead of waiting
   * on a hung server or network for ever); 0 or absent: no limit (admin commands, migrations).
   */
  queryTimeoutMs?: number
}

/** `kind` is 'constraint' for constraint violations (expected conflicts), else 'other'. */
export type QueryErrorObserver = (engine: Engine, kind: 'constraint' | 'other') => void

/** Opens SQLite (DATA_DIR/svc.db) or PostgreSQL from DATABASE_URL (`?schema=NAME` selects a schema). */
/**
 * Opens svc.db in WAL mode. That first statement reads the file, so one that is not a SQLite
 * database (or that this process cannot open) fails here, and the error names the file and
 * what to do, not SQLite's words alone ("file is not a database").
 */
function openSqliteFile(file: string): SQLite.Database {
  let database: SQLite.Database | undefined
  try {
    database = new SQLite(file)
    database.pragma('journal_mode = WAL')
    return database
  } catch (e) {
    database?.close()
    throw new Error(
      `cannot open the SQLite database ${file}: ${(e as Error).message}; set DATA_DIR to the service's data folder, or restore a snapshot (svc restore)`,
      { cause: e },
    )
  }
}

export async function openDatabase(opts: DbOptions): Promise<Db> {
  if (opts.databaseUrl) return openPostgres(opts.databaseUrl, opts.onQueryError, opts.queryTimeoutMs)
  ensureDataDir(opts.dataDir)
  const file = path.join(opts.dataDir, 'svc.db')
  privateDatabaseFile(file)
  const database = openSqliteFile(file)
  // commits reach the OS only; the barrier's fdatasync of the WAL makes them durable before
  // any caller is answered (docs/decisions.md: writes never stall the server)
  database.pragma('synchronous = NORMAL')
  // checkpoints run on the checkpointer's thread, never inside a commit on the event loop
  database.pragma('wal_autocheckpoint = 0')
  // a WAL restarted after a complete checkpoint is cut back to this size; below it the file is
  // kept, and frames overwrite blocks already allocated (an fdatasync without a size change)
  database.pragma(`journal_size_limit = ${WAL_KEEP_BYTES}`)
  database.pragma('busy_timeout = 10000')
  database.pragma('foreign_keys = ON')
  // page cache: 4 MiB instead of better-sqlite3's 16. A page past it is read again from the OS
  // page cache (one pread); the hot index pages fit, and the rest is the server's resident
  // memory (docs/decisions.md 53)
  database.pragma('cache_size = -4000')
  // the WAL file exists from here on: journal_mode=WAL creates it on the first read
  database.prepare('select 1 from sqlite_master limit 1').all()
  const checkpointer = new Checkpointer(file)
  const syncer = walSyncer(file)
  const barrier = new DurabilityBarrier(syncer.sync, async () => {
    // after a failed fsync the WAL's frames may be gone from the disk: only a complete
    // checkpoint (WAL synced, frames copied, database synced) makes the earlier commits durable.
    // A reader's snapshot holds back the frames after it for as long as its statement runs:
    // tried again for up to RECOVER_TRIES, so a read in flight does not fail the writes waiting
    let r = await checkpointer.passive()
    for (let i = 1; i < RECOVER_TRIES && (r.busy !== 0 || r.checkpointed !== r.log); i++) {
      await new Promise((ok) => setTimeout(ok, RECOVER_WAIT_MS))
      r = await checkpointer.passive()
    }
    if (r.busy !== 0 || r.checkpointed !== r.log) throw new Error(`checkpoint incomplete (${r.checkpointed}/${r.log} frames)`)
  })
  const dialect = new WriterDialect({ database, barrier })
  const k = new Kysely<Database>({ dialect, log: reportErrors('sqlite', opts.onQueryError) })
  const stopCheckpoints = scheduleCheckpoints(Number(database.pragma('page_size', { simple: true })), barrier, checkpointer, (fn) =>
    dialect.driver.exclusive(fn),
  )
  return {
    k,
    engine: 'sqlite',
    barrier,
    changeStamp: (tables) => dialect.driver.changeStamp(tables),
    lockUser: async () => {},
    lockName: async () => {},
    tryLock: (name, fn) => withLockFile(path.join(opts.dataDir, `.${name}.lock`), fn),
    close: async () => {
      stopCheckpoints()
      await barrier.drain()
      await checkpointer.close().catch(() => {})
      await k.destroy()
      syncer.close()
    },
  }
}

/** Process ids: whether one is running (EPERM: running as another user). */
function pidAlive(pid: number): boolean {
  if (!(pid > 0)) return false
  try {
    return process.kill(pid, 0)
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** SQLite's Db.tryLock: `file` is created exclusively holding this pid, removed after `fn`. */
async function withLockFile<T>(file: string, fn: () => Promise<T>): Promise<{ held: true; value: T } | { held: false }> {
  for (let attempt = 0; ; attempt++) {
    try {
      fs.writeFileSync(file, String(process.pid), { flag: 'wx' })
      break
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 2) throw e
    }
    let holder: string
    let age: number
    try {
      holder = fs.readFileSync(file, 'utf8')
      age = Date.now() - fs.statSync(file).mtimeMs
    } catch {
      continue // released meanwhile: try again
    }
    // held here (a run still going) or by a running process (an empty file: one being
    // written now); else left by a dead process: taken over
    if (pidAlive(Number(holder)) || (holder === '' && age < 60_000)) return { held: false }
    fs.rmSync(file, { force: true })
  }
  try {
    return { held: true, value: await fn() }
  } finally {
    fs.rmSync(file, { force: true })
  }
}

/** WAL size (bytes) past which the checkpointer catches up with writes paused, so the WAL restarts. */
const WAL_LIMIT_BYTES = 16 * 1024 * 1024
/** Size a restarted WAL keeps (journal_size_limit). */
const WAL_KEEP_BYTES = 64 * 1024 * 1024
/** The recovery's checkpoint after a failed fsync: tries, and the wait between them (1 s in all). */
const RECOVER_TRIES = 100
const RECOVER_WAIT_MS = 10
const CHECKPOINT_EVERY_MS = 200

/**
 * CHECKPOINT_EVERY_MS after a commit: a PASSIVE checkpoint on the worker (writers go on). The
 * timer is armed by a commit and re-armed while a checkpoint runs, so an idle server has no
 * timer here. A busy writer appends frames faster than a checkpoint ends, and the WAL only
 * restarts when a write begins with every frame copied; so once the WAL passes
 * WAL_LIMIT_BYTES, a second PASSIVE runs while the connection is held (writes queue for the
 * few frames written meanwhile, the event loop stays free), and the next write restarts the WAL.
 */
function scheduleCheckpoints(pageSize: number, barrier: DurabilityBarrier, cp: Checkpointer, exclusive: <T>(fn: () => Promise<T>) => Promise<T>): () => void {
  let seen = barrier.commits()
  let running = false
  let stopped = false
  let timer: NodeJS.Timeout | null = null
  const arm = () => {
    if (timer !== null || stopped) return
    timer = setTimeout(tick, CHECKPOINT_EVERY_MS)
    timer.unref()
  }
  const tick = () => {
    timer = null
    if (running) return arm()
    if (barrier.commits() === seen) return
    running = true
    seen = barrier.commits()
    cp.passive()
      .then(async (r) => {
        if (r.log * pageSize > WAL_LIMIT_BYTES) await exclusive(() => cp.passive())
      })
      .catch(() => {})
      .finally(() => {
        running = false
      })
  }
  barrier.watchCommits(arm)
  return () => {
    stopped = true
    if (timer !== null) clearTimeout(timer)
  }
}

/**
 * Kysely's PostgreSQL introspector (used by its Migrator to see whether the migration tables
 * exist) lists the tables of every schema in the database and calls
 * `has_schema_privilege(name, ...)` on each. When another client drops a schema during that
 * query, the function looks the name up after the drop and the query fails with "schema ...
 * does not exist" (3F000): several instances or test runs sharing one database, each in its
 * own ?schema=, made startup and `svc migrate` fail now and then (reproduced:
 * docs/benchmarks/2026-11-24-postgres-introspector.md). This introspector lists only the tables of the
 * connection's own schema (current_schema(): the ?schema= one, else public), which is all the
 * Migrator asks about, and leaves the others' alone.
 */
class ScopedPostgresDialect extends PostgresDialect {
  override createIntrospector(db: Kysely<any>): DatabaseIntrospector {
    const base = new PostgresIntrospector(db)
    const getTables = async (_options?: DatabaseMetadataOptions): Promise<TableMetadata[]> => {
      const rows = await sql<{ name: string; schema: string; kind: string }>`
        select c.relname as name, ns.nspname as schema, c.relkind as kind
        from pg_catalog.pg_class c join pg_catalog.pg_namespace ns on ns.oid = c.relnamespace
        where c.relkind in ('r', 'v', 'p') and ns.nspname = current_schema()`.execute(db)
      return rows.rows.map((r) => ({ name: r.name, schema: r.schema, isView: r.kind === 'v', columns: [] }))
    }
    return {
      getSchemas: () => base.getSchemas(),
      getTables,
      getMetadata: async (options) => ({ tables: await getTables(options) }),
    }
  }
}

/** PostgreSQL connections per instance: 8 per core, between 16 and 64. */
export const POOL_SIZE = Math.min(64, Math.max(16, 8 * os.availableParallelism()))

/**
 * Whether the schema DATABASE_URL's `?schema=` names exists (true without one: `public`), by a
 * read: openDatabase makes the schema, which `svc move --dry-run` must not.
 */
export async function postgresSchemaExists(databaseUrl: string): Promise<boolean> {
  const url = new URL(databaseUrl)
  const schema = url.searchParams.get('schema')
  if (schema === null) return true
  url.searchParams.delete('schema')
  const pg = await loadPg()
  const client = new pg.Client({ connectionString: url.toString() })
  await client.connect().catch((e: unknown) => {
    throw new Error(
      `cannot reach PostgreSQL at DATABASE_URL ${url.protocol}//${url.username ? `${url.username}@` : ''}${url.host}${url.pathname}: ${(e as Error).message}`,
      {
        cause: e,
      },
    )
  })
  try {
    return ((await client.query('select 1 from pg_namespace where nspname = $1', [schema])).rowCount ?? 0) > 0
  } finally {
    await client.end()
  }
}

async function openPostgres(databaseUrl: string, onQueryError?: QueryErrorObserver, queryTimeoutMs = 0): Promise<Db> {
  const pg = await loadPg()
  const url = new URL(databaseUrl)
  const schema = url.searchParams.get('schema')
  url.searchParams.delete('schema')
  if (schema !== null && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw new Error('DATABASE_URL: schema must match [a-z_][a-z0-9_]*')
  }
  // a server that cannot be reached is named (without its password) in the error
  const unreachable = (e: unknown) => {
    const shown = `${url.protocol}//${url.username ? `${url.username}@` : ''}${url.host}${url.pathname}`
    return new Error(`cannot reach PostgreSQL at DATABASE_URL ${shown}: ${(e as Error).message} (is it running, and does DATABASE_URL name it?)`, { cause: e })
  }
  if (schema) {
    const admin = new pg.Client({ connectionString: url.toString() })
    await admin.connect().catch((e: unknown) => {
      throw unreachable(e)
    })
    try {
      await admin.query(`create schema if not exists "${schema}"`).catch(async (e: unknown) => {
        // instances starting at once on a new schema: `if not exists` does not stop PostgreSQL
        // from failing the second create (23505 on pg_namespace); the schema is there, go on
        const r = await admin.query('select 1 from pg_namespace where nspname = $1', [schema])
        if (r.rowCount === 0) throw e
      })
    } finally {
      await admin.end()
    }
  }
  const pool = new pg.Pool({
    connectionString: url.toString(),
    // commits waiting on the WAL flush share it (PostgreSQL's group commit) only when several
    // are in flight: more connections than cores, as I/O waits dominate a short write
    max: POOL_SIZE,
    // time to get a connection, including the wait for a free one under load
    connectionTimeoutMillis: 5_000,
    ...(queryTimeoutMs > 0 ? { query_timeout: queryTimeoutMs } : {}),
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  })
  // a connection that drops (server restart, network cut) emits 'error': on the pool when
  // idle, on the client itself when checked out between two queries (a transaction). With no
  // listener either would end the process; the pool discards a broken client on release, and
  // the next query on it fails like any other query
  pool.on('error', () => {})
  pool.on('connect', (client) => client.on('error', () => {}))
  const named = new Map<string, string>()
  // a query that gets no connection (the server down or restarting) fails before Kysely logs
  // it: counted here, so svc_db_errors_total shows an outage too
  const noConnection = () => onQueryError?.('postgres', 'other')
  const k = new Kysely<Database>({
    dialect: new ScopedPostgresDialect({ pool: namingPool(pool, named, noConnection) }),
    log: reportErrors('postgres', onQueryError),
  })
  // fail fast when the server is unreachable
  await sql`select 1`.execute(k).catch(async (e: unknown) => {
    await k.destroy().catch(() => {})
    throw unreachable(e)
  })
  return {
    k,
    engine: 'postgres',
    schema: schema ?? undefined,
    lockUser: async (trx, userId) => {
      await trx.selectFrom('users').select('id').where('id', '=', userId).forUpdate().execute()
    },
    lockName: async (trx, name) => {
      await sql`select pg_advisory_xact_lock(hashtextextended(${`svc.${name}.`} || current_schema(), 0))`.execute(trx)
    },
    tryLock: async (name, fn) => {
      // the transaction holds only the lock (no snapshot between statements): it keeps no
      // row versions from vacuum however long `fn` runs
      const got = { held: false } as { held: false } | { held: true; value: Awaited<ReturnType<typeof fn>> }
      await k.transaction().execute(async (trx) => {
        const r = await sql<{ ok: boolean }>`select pg_try_advisory_xact_lock(hashtextextended(${`svc.${name}.`} || current_schema(), 0)) as ok`.execute(trx)
        if (r.rows[0]?.ok === true) Object.assign(got, { held: true, value: await fn() })
      })
      return got
    },
    prepare(text) {
      if (!named.has(text)) named.set(text, `svc_${crypto.createHash('sha256').update(text).digest('hex').slice(0, 24)}`)
    },
    close: () => k.destroy(),
  }
}

/**
 * The pool Kysely sees: its clients run the SQL texts in `named` as named statements (pg
 * parses and plans one once per connection, then only binds and executes it), every other
 * text as before. A name is a digest of its text, so one name never stands for two texts.
 */
function namingPool(pool: Pg.Pool, named: ReadonlyMap<string, string>, onConnectError: () => void): PostgresPool {
  // one wrapper per pg client, so Kysely (which keys its connections by client) keeps one too
  const wrappers = new WeakMap<Pg.PoolClient, PostgresPoolClient>()
  return {
    async connect() {
      const client = await pool.connect().catch((e: unknown) => {
        onConnectError()
        throw e
      })
      let w = wrappers.get(client)
      if (w === undefined) {
        // a query that timed out (query_timeout) is still the connection's active query: a
        // client released with an error is closed by the pool, never handed out again
        let timedOut: Error | undefined
        w = {
          // Kysely calls query(sql, parameters) only: streaming (a cursor) is not configured
          query: (async (text: string, values: unknown[]) => {
            const name = named.get(text)
            try {
              return await (name === undefined ? client.query(text, values) : client.query({ name, text, values }))
            } catch (e) {
              if ((e as Error).message === 'Query read timeout') timedOut = e as Error
              throw e
            }
          }) as unknown as PostgresPoolClient['query'],
          release: () => client.release(timedOut),
        }
        wrappers.set(client, w)
      }
      return w
    },
    end: () => pool.end(),
  }
}

/** Kysely log hook: reports failed queries to the observer, constraint violations told apart. */
function reportErrors(engine: Engine, observer: QueryErrorObserver | undefined) {
  if (!observer) return undefined
  return (event: LogEvent) => {
    if (event.level === 'error') observer(engine, isConstraintViolation(event.error) ? 'constraint' : 'other')
  }
}

function isConstraintViolation(e: unknown): boolean {
  const code = (e as { code?: unknown })?.code
  return typeof code === 'string' && (code.startsWith('23') || code.startsWith('SQLITE_CONSTRAINT'))
}

/** True when a database error is a unique-constraint violation (both engines). */
/**
 * A row written refers to one that is gone (foreign key): its account or project was deleted
 * by another request while this one ran.
 */
export function isForeignKeyViolation(e: unknown): boolean {
  const err = e as { code?: string }
  return err?.code === '23503' || err?.code === 'SQLITE_CONSTRAINT_FOREIGNKEY'
}

export function isUniqueViolation(e: unknown): boolean {
  const err = e as { code?: string; message?: string }
  return err?.code === '23505' || err?.code === 'SQLITE_CONSTRAINT_UNIQUE' || err?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
}

import fs from 'node:fs'
import path from 'node:path'
import SQLite from 'better-sqlite3'
import pg from 'pg'
import {
  Kysely, PostgresDialect, PostgresIntrospector, SqliteDialect, SqliteDriver, CompiledQuery, sql,
  type DatabaseConnection, type DatabaseIntrospector, type DatabaseMetadataOptions, type TableMetadata,
  type Transaction, type LogEvent,
} from 'kysely'
import type { Database } from './schema.js'
import { metrics } from '../http/metrics.js'

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
  close(): Promise<void>
}

// int8 (bigint) as JS numbers: all our bigints are epoch milliseconds or byte counts (< 2^53).
pg.types.setTypeParser(20, (v: string) => Number(v))

/**
 * SQLite transactions start with BEGIN IMMEDIATE so a transaction that reads and then writes
 * takes the write lock up front; the admin CLI may write to the same file concurrently.
 */
class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'))
  }
}

class ImmediateSqliteDialect extends SqliteDialect {
  constructor(private readonly cfg: ConstructorParameters<typeof SqliteDialect>[0]) {
    super(cfg)
  }
  override createDriver() {
    return new ImmediateSqliteDriver(this.cfg)
  }
}

export interface DbOptions {
  databaseUrl: string | null
  dataDir: string
}

/** Opens SQLite (DATA_DIR/svc.db) or PostgreSQL from DATABASE_URL (`?schema=NAME` selects a schema). */
export async function openDatabase(opts: DbOptions): Promise<Db> {
  if (opts.databaseUrl) return openPostgres(opts.databaseUrl)
  fs.mkdirSync(opts.dataDir, { recursive: true })
  const file = path.join(opts.dataDir, 'svc.db')
  const database = new SQLite(file)
  database.pragma('journal_mode = WAL')
  database.pragma('synchronous = FULL')
  database.pragma('busy_timeout = 10000')
  database.pragma('foreign_keys = ON')
  const k = new Kysely<Database>({ dialect: new ImmediateSqliteDialect({ database }), log: countErrors('sqlite') })
  return {
    k,
    engine: 'sqlite',
    lockUser: async () => {},
    close: () => k.destroy(),
  }
}

/**
 * Kysely's PostgreSQL introspector (used by its Migrator to see whether the migration tables
 * exist) lists the tables of every schema in the database and calls
 * `has_schema_privilege(name, ...)` on each. When another client drops a schema during that
 * query, the function looks the name up after the drop and the query fails with "schema ...
 * does not exist" (3F000): several instances or test runs sharing one database, each in its
 * own ?schema=, made startup and `svc migrate` fail now and then. Checked on this machine
 * with one client creating and dropping schemas in a loop: Kysely's query failed 254 times in
 * 3,478 runs, this one 0 times in 6,319. This introspector lists only the tables of the
 * connection's own schema (current_schema(): the ?schema= one, else public), which is all the
 * Migrator asks about, and leaves the others' alone.
 */
class ScopedPostgresDialect extends PostgresDialect {
  createIntrospector(db: Kysely<any>): DatabaseIntrospector {
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

async function openPostgres(databaseUrl: string): Promise<Db> {
  const url = new URL(databaseUrl)
  const schema = url.searchParams.get('schema')
  url.searchParams.delete('schema')
  if (schema !== null && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw new Error('DATABASE_URL: schema must match [a-z_][a-z0-9_]*')
  }
  if (schema) {
    const admin = new pg.Client({ connectionString: url.toString() })
    await admin.connect()
    try {
      await admin.query(`create schema if not exists "${schema}"`)
    } finally {
      await admin.end()
    }
  }
  const pool = new pg.Pool({
    connectionString: url.toString(),
    max: 10,
    // time to get a connection, including the wait for a free one under load
    connectionTimeoutMillis: 30000,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  })
  const k = new Kysely<Database>({ dialect: new ScopedPostgresDialect({ pool }), log: countErrors('postgres') })
  // fail fast when the server is unreachable
  await sql`select 1`.execute(k)
  return {
    k,
    engine: 'postgres',
    schema: schema ?? undefined,
    lockUser: async (trx, userId) => {
      await trx.selectFrom('users').select('id').where('id', '=', userId).forUpdate().execute()
    },
    close: () => k.destroy(),
  }
}

/** Kysely log hook: counts failed queries for /metrics (constraint violations apart: they are expected). */
function countErrors(engine: Engine) {
  return (event: LogEvent) => {
    if (event.level === 'error') metrics.dbErrors.inc({ engine, kind: isConstraintViolation(event.error) ? 'constraint' : 'other' })
  }
}

function isConstraintViolation(e: unknown): boolean {
  const code = (e as { code?: unknown })?.code
  return typeof code === 'string' && (code.startsWith('23') || code.startsWith('SQLITE_CONSTRAINT'))
}

/** True when a database error is a unique-constraint violation (both engines). */
export function isUniqueViolation(e: unknown): boolean {
  const err = e as { code?: string; message?: string }
  return err?.code === '23505' || err?.code === 'SQLITE_CONSTRAINT_UNIQUE' || err?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
}

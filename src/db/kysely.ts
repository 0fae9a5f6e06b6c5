import fs from 'node:fs'
import path from 'node:path'
import SQLite from 'better-sqlite3'
import pg from 'pg'
import {
  Kysely, PostgresDialect, SqliteDialect, SqliteDriver, CompiledQuery, sql,
  type DatabaseConnection, type Transaction,
} from 'kysely'
import type { Database } from './schema.js'

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
  const k = new Kysely<Database>({ dialect: new ImmediateSqliteDialect({ database }) })
  return {
    k,
    engine: 'sqlite',
    lockUser: async () => {},
    close: () => k.destroy(),
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
  const k = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
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

/** True when a database error is a unique-constraint violation (both engines). */
export function isUniqueViolation(e: unknown): boolean {
  const err = e as { code?: string; message?: string }
  return err?.code === '23505' || err?.code === 'SQLITE_CONSTRAINT_UNIQUE' || err?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
}

// The databases a fresh test server starts from: a SQLite file and a PostgreSQL schema migrated
// to the latest schema. scripts/run-tests.mjs makes them once per run (make-templates.ts) into
// the folder named by SVC_TEST_TEMPLATES; a test process reads them from there, or makes its own
// when run alone. The migrations' own tests start from empty or older databases instead.
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import pg from 'pg'
import SQLite from 'better-sqlite3'
import { openDatabase } from '../../src/db/kysely.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import { FEATURE_TABLES } from '../../src/features/tables.js'

const execFileP = promisify(execFile)

/** A PostgreSQL schema as `pg_dump` wrote it, to replay with `name` replaced by another schema's. */
export interface PgTemplate {
  name: string
  sql: string
}

const SQLITE_FILE = 'svc.db'
const PG_FILE = 'postgres.json'

/**
 * A SQLite database migrated to the latest schema: a self-contained file (no WAL beside it),
 * returned as bytes so no folder outlives the call.
 */
export async function makeSqliteTemplate(): Promise<Buffer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-template-'))
  try {
    const db = await openDatabase({ databaseUrl: null, dataDir: dir })
    try {
      await migrateToLatest(db, FEATURE_TABLES)
    } finally {
      await db.close()
    }
    const file = path.join(dir, SQLITE_FILE)
    const raw = new SQLite(file)
    raw.pragma('wal_checkpoint(TRUNCATE)')
    raw.pragma('journal_mode = DELETE')
    raw.close()
    return fs.readFileSync(file)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * `pg_dump` of a schema migrated to the latest schema (its tables, indexes, functions and the
 * migrations' own rows, as INSERTs); the schema is dropped after. Its name is random, found
 * nowhere else in the dump. null where pg_dump cannot dump that server (none installed, an
 * embedded PostgreSQL of another version): each start then runs the migrations.
 */
export async function makePgTemplate(pgUrl: string): Promise<PgTemplate | null> {
  const name = `svc_tpl_${crypto.randomBytes(5).toString('hex')}`
  try {
    const db = await openDatabase({ databaseUrl: `${pgUrl}?schema=${name}`, dataDir: os.tmpdir() })
    try {
      await migrateToLatest(db, FEATURE_TABLES)
    } finally {
      await db.close()
    }
    const args = ['--schema', name, '--inserts', '--no-owner', '--no-privileges', '--no-comments', '--dbname', pgUrl]
    const dump = await execFileP('pg_dump', args, { maxBuffer: 64 << 20 }).catch(() => null)
    // psql's meta-commands (the `restrict` lines newer pg_dump releases write) are not SQL
    return dump === null ? null : { name, sql: dump.stdout.replace(/^\\.*$/gm, '') }
  } finally {
    const c = new pg.Client({ connectionString: pgUrl })
    await c.connect()
    try {
      await c.query(`drop schema if exists "${name}" cascade`)
    } finally {
      await c.end()
    }
  }
}

/** Writes both templates into `dir` (the PostgreSQL one only when `pgUrl` is given and dumpable). */
export async function writeTemplates(dir: string, pgUrl: string | null): Promise<void> {
  fs.writeFileSync(path.join(dir, SQLITE_FILE), await makeSqliteTemplate(), { mode: 0o600 })
  const t = pgUrl === null ? null : await makePgTemplate(pgUrl)
  if (t !== null) fs.writeFileSync(path.join(dir, PG_FILE), JSON.stringify(t), { mode: 0o600 })
}

/** The run's shared template file `file`, or undefined when this process must make its own. */
function shared(file: string): Buffer | undefined {
  const dir = process.env.SVC_TEST_TEMPLATES
  if (!dir) return undefined
  try {
    return fs.readFileSync(path.join(dir, file))
  } catch {
    return undefined
  }
}

let sqliteTemplate: Promise<Buffer> | undefined
/** The migrated SQLite database's bytes: the run's shared copy, else made once per process. */
export function migratedSqlite(): Promise<Buffer> {
  sqliteTemplate ??= (async () => shared(SQLITE_FILE) ?? makeSqliteTemplate())()
  return sqliteTemplate
}

let pgTemplate: Promise<PgTemplate | null> | undefined
/** The migrated PostgreSQL schema's dump: the run's shared copy, else made once per process. */
export function migratedPostgres(pgUrl: string): Promise<PgTemplate | null> {
  pgTemplate ??= (async () => {
    const s = shared(PG_FILE)
    return s === undefined ? makePgTemplate(pgUrl) : (JSON.parse(s.toString('utf8')) as PgTemplate)
  })()
  return pgTemplate
}

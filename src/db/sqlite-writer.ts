import type SQLite from 'better-sqlite3'
import { CompiledQuery, SqliteAdapter, SqliteDialect, SqliteDriver, type DatabaseConnection, type DialectAdapter, type QueryResult } from 'kysely'
import type { DurabilityBarrier } from './durability.js'
import { dropOldest } from '../util/oldest.js'

/** Prepared statements kept per connection (distinct SQL texts; the app has a few hundred). */
const STATEMENT_CACHE_SIZE = 512
const DDL = /^\s*(create|alter|drop)\b/i
/** Row statements: when they touch no row they write nothing (no trigger or cascade fires either). */
const DML = /^\s*(insert|update|delete|replace)\b/i

/** A set of tables whose rows a reader keeps: `n` grows whenever one of them may have changed. */
interface Watch {
  names: RegExp
  n: number
}

/**
 * better-sqlite3 behind Kysely, one connection, with a durability barrier. The connection
 * notices each commit of a write (a COMMIT after a writing statement, or a writing statement
 * outside a transaction) and takes a barrier sequence number after it ran. Kysely awaits
 * releaseConnection before `execute()` / `transaction().execute()` return; the driver frees
 * the connection first (the next transaction starts at once) and then waits until that
 * sequence is durable, so every caller is answered only after its own commit is on disk,
 * and the commits of all callers waiting meanwhile share one fsync.
 */
class WriterConnection implements DatabaseConnection {
  /** A writing statement ran since the last commit or rollback. */
  private dirty = false
  /**
   * Prepared statements by SQL text, least recently used first: the queries of the request
   * paths repeat, and preparing one costs more than running it. Statements run synchronously
   * and are never iterated, so one statement object serves every caller.
   */
  private readonly statements = new Map<string, SQLite.Statement>()
  /** Tables watched by changeStamp: every statement that may write is matched against them. */
  readonly watches: Watch[] = []
  constructor(
    private readonly db: SQLite.Database,
    private readonly committed: () => void,
  ) {}

  private statement(sql: string): SQLite.Statement {
    let stmt = this.statements.get(sql)
    if (stmt !== undefined) {
      this.statements.delete(sql)
    } else {
      stmt = this.db.prepare(sql)
      if (this.statements.size >= STATEMENT_CACHE_SIZE) dropOldest(this.statements)
    }
    this.statements.set(sql, stmt)
    return stmt
  }

  executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    const { sql, parameters } = compiledQuery
    // a schema change (migrations) starts the cache afresh: no statement outlives the schema it was prepared on
    if (DDL.test(sql)) this.statements.clear()
    const stmt = this.statement(sql)
    let result: QueryResult<R>
    // rows touched: a RETURNING statement returns one row per row it touched
    let touched: number
    if (stmt.reader) {
      result = { rows: stmt.all(parameters) as R[] }
      touched = result.rows.length
    } else {
      const { changes, lastInsertRowid } = stmt.run(parameters)
      result = { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] }
      touched = changes
    }
    // COMMIT and ROLLBACK are "readonly" in SQLite's sense; BEGIN IMMEDIATE is not, yet writes
    // nothing; nor does a row statement that touched no row (a refused conditional write, an
    // update of a missing row): its caller need not wait for a sync, as a read does not
    if (!stmt.readonly) {
      // before the statement's commit is acknowledged (a rolled-back change only costs a read)
      for (const w of this.watches) if (w.names.test(sql)) w.n++
      if (!/^\s*begin\b/i.test(sql) && !(touched === 0 && DML.test(sql))) this.dirty = true
    }
    if (!this.db.inTransaction && this.dirty) {
      this.dirty = false
      if (!/^\s*rollback\b/i.test(sql)) this.committed()
    }
    return Promise.resolve(result)
  }

  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming is not used with SQLite')
  }
}

/** Kysely's SQLite driver with the connection above; transactions begin IMMEDIATE (the admin CLI may write concurrently). */
class WriterDriver extends SqliteDriver {
  private readonly lock = new Mutex()
  private readonly connection: WriterConnection
  /** The barrier sequence of the last write committed by the current holder of the connection. */
  private seq = 0

  constructor(
    private readonly database: SQLite.Database,
    private readonly barrier: DurabilityBarrier,
  ) {
    super({ database })
    this.connection = new WriterConnection(database, () => {
      this.seq = barrier.commit()
    })
  }

  override async init(): Promise<void> {}

  /**
   * A stamp for rows of `tables` a reader keeps between requests: its value changes whenever a
   * statement of this connection that may write names one of the tables (a schema change
   * included), or another connection (an operator command, another process) committed since
   * the last call (SQLite's data_version). Read the stamp before reading the rows: a row is
   * current while the stamp read before it is unchanged.
   */
  changeStamp(tables: readonly string[]): () => number {
    const w: Watch = { names: new RegExp(`\\b(${tables.join('|')})\\b`, 'i'), n: 0 }
    this.connection.watches.push(w)
    const version = this.database.prepare('pragma data_version').pluck()
    let seen = version.get()
    return () => {
      const v = version.get()
      if (v !== seen) {
        seen = v
        w.n++
      }
      return w.n
    }
  }

  override async acquireConnection(): Promise<DatabaseConnection> {
    await this.lock.lock()
    return this.connection
  }

  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'))
  }

  override async releaseConnection(): Promise<void> {
    const seq = this.seq
    this.seq = 0
    this.lock.unlock()
    if (seq !== 0) await this.barrier.wait(seq)
  }

  /** Runs `fn` while holding the connection: no statement of this process runs meanwhile. */
  async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    await this.lock.lock()
    try {
      return await fn()
    } finally {
      this.lock.unlock()
    }
  }

  override async destroy(): Promise<void> {
    this.database.close()
  }
}

/**
 * SQLite runs schema changes inside a transaction, so Kysely's migrator may run every pending
 * migration of a start in one (its stock SQLite adapter says otherwise and runs them one
 * statement at a time): a migration that fails, or a process killed half way through one,
 * leaves the database as it was before them, and the next start runs them all again.
 */
class TransactionalDdlAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true
  }
}

export class WriterDialect extends SqliteDialect {
  readonly driver: WriterDriver
  constructor(cfg: { database: SQLite.Database; barrier: DurabilityBarrier }) {
    super({ database: cfg.database })
    this.driver = new WriterDriver(cfg.database, cfg.barrier)
  }
  override createDriver(): WriterDriver {
    return this.driver
  }
  override createAdapter(): DialectAdapter {
    return new TransactionalDdlAdapter()
  }
}

/** FIFO lock: waiters are served in arrival order. */
class Mutex {
  private held = false
  private queue: Array<() => void> = []
  lock(): Promise<void> {
    if (!this.held) {
      this.held = true
      return Promise.resolve()
    }
    return new Promise((resolve) => this.queue.push(resolve))
  }
  unlock(): void {
    const next = this.queue.shift()
    if (next) next()
    else this.held = false
  }
}

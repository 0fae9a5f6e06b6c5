import { Worker } from 'node:worker_threads'
import { createRequire } from 'node:module'

/** What `PRAGMA wal_checkpoint` answers: frames in the WAL and frames copied to the database. */
export interface CheckpointResult {
  busy: number
  log: number
  checkpointed: number
}

// The worker's own connection, synchronous=FULL: a checkpoint syncs the WAL before copying and
// the database file after, so frames it copied are durable before the writer may restart the
// WAL over them. Inline (eval) so the same code runs from src/ (tsx) and dist/.
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads')
const Database = require(workerData.module)
const db = new Database(workerData.file, { fileMustExist: true })
db.pragma('busy_timeout = 5000')
db.pragma('synchronous = FULL')
db.pragma('wal_autocheckpoint = 0')
parentPort.on('message', (m) => {
  if (m.close) { db.close(); parentPort.close(); return }
  try {
    const r = db.pragma('wal_checkpoint(' + m.mode + ')')[0]
    parentPort.postMessage({ id: m.id, result: r })
  } catch (e) {
    parentPort.postMessage({ id: m.id, error: String(e && e.message || e) })
  }
})
`

/**
 * Runs WAL checkpoints on a worker thread, off the event loop. One request at a time is sent;
 * callers queue behind it.
 */
export class Checkpointer {
  private worker: Worker
  private next = 1
  private waiting = new Map<number, { resolve: (r: CheckpointResult) => void; reject: (e: Error) => void }>()
  private chain: Promise<unknown> = Promise.resolve()
  private closed = false

  constructor(file: string) {
    const module = createRequire(import.meta.url).resolve('better-sqlite3')
    this.worker = new Worker(WORKER, { eval: true, workerData: { file, module } })
    this.worker.unref()
    this.worker.on('message', (m: { id: number; result?: CheckpointResult; error?: string }) => {
      const w = this.waiting.get(m.id)
      this.waiting.delete(m.id)
      if (this.waiting.size === 0) this.worker.unref()
      if (!w) return
      if (m.error !== undefined) w.reject(new Error(`checkpoint failed: ${m.error}`))
      else w.resolve(m.result!)
    })
    const failAll = (e: Error) => {
      for (const w of this.waiting.values()) w.reject(e)
      this.waiting.clear()
    }
    this.worker.on('error', failAll)
    this.worker.on('exit', () => {
      this.closed = true
      failAll(new Error('checkpoint worker exited'))
    })
  }

  /** `PRAGMA wal_checkpoint(PASSIVE)` on the worker: never waits for a lock, never blocks the writer. */
  passive(): Promise<CheckpointResult> {
    const run = this.chain.then(() => this.send('PASSIVE'))
    this.chain = run.catch(() => {})
    return run
  }

  private send(mode: string): Promise<CheckpointResult> {
    if (this.closed) return Promise.reject(new Error('checkpoint worker closed'))
    const id = this.next++
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject })
      // held while an answer is awaited, so a short-lived process waits for it
      this.worker.ref()
      this.worker.postMessage({ id, mode })
    })
  }

  /** Closes the worker's connection after any checkpoint in progress, then ends the thread. */
  async close(): Promise<void> {
    await this.chain
    if (this.closed) return
    const exited = new Promise((r) => this.worker.once('exit', r))
    this.worker.ref()
    this.worker.postMessage({ close: true })
    await exited
  }
}

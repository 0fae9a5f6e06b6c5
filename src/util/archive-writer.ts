import zlib from 'node:zlib'
import type { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import tar from 'tar-stream'

/** A streamed blob: its exact size, and its bytes opened only when the entry is written. */
export type Lazy = { size: number; open: () => Promise<Readable> }

/**
 * One archive being written (the per-user export, a deploy's download). Entries are written
 * in the order added; a Lazy entry's stream is opened when its turn comes, so at most one blob
 * is open and none is held in memory.
 */
export interface ArchiveWriter {
  add(name: string, body: Buffer | Lazy): Promise<void>
  abort(e: Error): void
  /** Ends the archive and resolves once `out` has it all (rejects on any error). */
  finish(): Promise<void>
}

/** tar + gzip (tar-stream): add() resolves once the entry is in the tar stream. */
export function tarWriter(out: Writable, mtime: Date): ArchiveWriter {
  const pack = tar.pack()
  const done = pipeline(pack, zlib.createGzip(), out)
  let failed = false
  return {
    add: (name, body) =>
      new Promise<void>((res, rej) => {
        if (Buffer.isBuffer(body)) {
          pack.entry({ name, size: body.length, mtime, mode: 0o644 }, body, (e) => (e ? rej(e) : res()))
          return
        }
        const entry = pack.entry({ name, size: body.size, mtime, mode: 0o644 }, (e) => (e ? rej(e) : res()))
        body
          .open()
          .then((src) => src.on('error', rej).pipe(entry))
          .catch(rej)
      }),
    abort(e) {
      failed = true
      pack.destroy(e)
    },
    async finish() {
      if (!failed) pack.finalize()
      await done
    },
  }
}

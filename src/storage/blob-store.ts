import fsp from 'node:fs/promises'
import type { Readable } from 'node:stream'

/** Result of storing a blob: its SHA-256 (hex, the content address) and size in bytes. */
export interface StoredBlob {
  digest: string
  size: number
}

/** A local file holding exactly one blob's bytes (BlobStore.localFile). */
export interface LocalBlobFile {
  path: string
  size: number
}

export interface PutOptions {
  /** Refuse (and discard) the body when it grows past this many bytes. */
  maxBytes?: number
  /** Called instead of the default error when maxBytes is passed; must return the error to throw. */
  tooLarge?: (limit: number) => Error
}

/**
 * Content-addressed blob storage. Blobs are immutable: a key is the SHA-256 of the bytes,
 * so equal content is stored once. Writers put the blob first and commit the row that
 * points to it afterwards; `sweep` removes blobs that no row references.
 */
export interface BlobStore {
  readonly kind: string
  /** Streams a body into the store, hashing and counting it on the way. */
  put(body: Readable | Buffer, opts?: PutOptions): Promise<StoredBlob>
  /**
   * Optional: stores several small blobs and makes them durable together (the local driver
   * syncs the filesystem once per batch instead of twice per blob). Same guarantees as put:
   * when it resolves every blob is whole on disk; a crash before leaves none of them visible.
   */
  putBatch?(bodies: Buffer[]): Promise<StoredBlob[]>
  /**
   * Optional: refuses, as put would, bytes already stored that a new row is about to reference
   * without a put (a deploy naming digests the user holds, a publish of a project's files), so
   * a refusal of put cannot be passed by naming the digest instead. The service's store has it
   * (storage/blocklist.ts); resolves when every digest may be used.
   */
  admit?(digests: Iterable<string>): Promise<void>
  /** Streams a blob out, optionally a byte range (inclusive end). */
  get(digest: string, range?: { start: number; end: number }): Promise<Readable>
  /**
   * A local file holding exactly this blob's bytes, for sendfile or an open-file cache: the
   * blob file itself (disk driver), the disk cache's verified copy (S3 with a blob cache,
   * fetched on a miss), or null when the store keeps no local copy (S3 without a cache, a blob
   * larger than the cache takes): stream it with get() then. A missing blob fails as get()
   * does (STORAGE_UNAVAILABLE). The file may be removed later (eviction, sweep): open it at
   * once (`openLocalBlob` does, and asks again if it vanished); an open descriptor keeps
   * reading the same bytes after an unlink.
   */
  localFile(digest: string): Promise<LocalBlobFile | null>
  /**
   * Optional: where this blob's file is when the store keeps it in its current layout, with no
   * I/O (the disk driver). The caller opens it at once and, when that fails with ENOENT (an
   * older layout, a missing blob), asks localFile. Saves the public host a stat per new path.
   */
  localPathNow?(digest: string): string
  /** Reads a whole (small) blob. */
  read(digest: string): Promise<Buffer>
  exists(digest: string): Promise<boolean>
  /**
   * A blob's last write time (epoch ms), which a put of the same bytes refreshes; null when
   * there is no such blob. The sweeper checks it again right before a delete.
   */
  modifiedMs(digest: string): Promise<number | null>
  /**
   * Deletes a blob; with `ifNotModifiedAfter`, only when its last write time is at or before
   * it (the sweeper's check, made inside the delete). Resolves whether a blob was deleted. The
   * disk driver makes the check and the delete one step against a put of the same bytes (the
   * file is renamed aside first, then its time read); S3 has no such step: there a put in the
   * one round trip between its HEAD and its DELETE loses (docs/decisions.md 102).
   */
  delete(digest: string, ifNotModifiedAfter?: number): Promise<boolean>
  /** Every stored blob with its last write time (for the sweeper). */
  list(): AsyncIterable<{ digest: string; modifiedMs: number }>
  /** Removes temporary files older than `olderThanMs` (crash leftovers). */
  cleanTemp(olderThanMs: number): Promise<number>
  /** Resolves when the store answers (readiness checks); rejects otherwise. */
  ping(): Promise<void>
  close(): Promise<void>
}

export const DIGEST_RE = /^[0-9a-f]{64}$/

/**
 * Opens the local file of a blob (BlobStore.localFile) for reading; null when the store has
 * none for it. A file removed between lookup and open (evicted, swept) is looked up once more.
 * The caller closes the handle.
 */
export async function openLocalBlob(store: BlobStore, digest: string): Promise<{ handle: fsp.FileHandle; size: number } | null> {
  for (let attempt = 0; ; attempt++) {
    const f = await store.localFile(digest)
    if (f === null) return null
    try {
      return { handle: await fsp.open(f.path, 'r'), size: f.size }
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || attempt > 0) throw e
    }
  }
}

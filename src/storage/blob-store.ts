import type { Readable } from 'node:stream'

/** Result of storing a blob: its SHA-256 (hex, the content address) and size in bytes. */
export interface StoredBlob {
  digest: string
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
  /** Streams a blob out, optionally a byte range (inclusive end). */
  get(digest: string, range?: { start: number; end: number }): Promise<Readable>
  /** Reads a whole (small) blob. */
  read(digest: string): Promise<Buffer>
  exists(digest: string): Promise<boolean>
  /**
   * A blob's last write time (epoch ms), which a put of the same bytes refreshes; null when
   * there is no such blob. The sweeper checks it again right before a delete.
   */
  modifiedMs(digest: string): Promise<number | null>
  delete(digest: string): Promise<void>
  /** Every stored blob with its last write time (for the sweeper). */
  list(): AsyncIterable<{ digest: string; modifiedMs: number }>
  /** Removes temporary files older than `olderThanMs` (crash leftovers). */
  cleanTemp(olderThanMs: number): Promise<number>
  close(): Promise<void>
}

export const DIGEST_RE = /^[0-9a-f]{64}$/

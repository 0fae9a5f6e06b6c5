import type { BlobStore, StoredBlob } from './blob-store.js'

/** A batch of small blobs is stored once it holds this many bytes or files. */
export const BATCH_BYTES = 16 * 1024 * 1024
export const BATCH_FILES = 4096

/**
 * Collects small blobs and stores them together: through putBatch (one durability step per
 * batch) when the store has it, else one put each. At most about BATCH_BYTES are held; `flush`
 * stores what is held, and `stored` hears of each blob once it is durable. A batch never
 * flushed is dropped with the batcher: nothing of it was written.
 */
export function createBlobBatch(blobs: BlobStore, stored?: (b: StoredBlob) => void) {
  let held: Buffer[] = []
  let bytes = 0
  const flush = async (): Promise<void> => {
    if (held.length === 0) return
    const bodies = held
    held = []
    bytes = 0
    const rs = blobs.putBatch ? await blobs.putBatch(bodies) : await Promise.all(bodies.map((b) => blobs.put(b)))
    if (stored) for (const r of rs) stored(r)
  }
  return {
    async add(body: Buffer): Promise<void> {
      held.push(body)
      bytes += body.length
      if (bytes >= BATCH_BYTES || held.length >= BATCH_FILES) await flush()
    },
    flush,
  }
}

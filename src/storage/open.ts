import { blobFolder, type Config } from '../config.js'
import type { BlobStore } from './blob-store.js'
import { createLocalBlobStore } from './local.js'
import { createBlobCache, removingCachedCopies, type BlobCacheEvents } from './disk-cache.js'

export interface OpenBlobStoreOptions {
  /**
   * 'serve' (the server): S3 storage gets its disk cache (BLOB_CACHE_SIZE). 'tool' (operator
   * commands, the default): no cache is opened, the server owns it; deletes still remove
   * cached copies from its folder.
   */
  mode?: 'serve' | 'tool'
  /** Wraps the driver itself, under the cache (metrics count what the driver reads). */
  wrap?: (store: BlobStore) => BlobStore
  cacheEvents?: BlobCacheEvents
}

/** Opens the blob store named by STORAGE_URL (unset: DATA_DIR/blobs). */
export async function openBlobStore(config: Config, o: OpenBlobStoreOptions = {}): Promise<BlobStore> {
  const wrap = o.wrap ?? ((s: BlobStore) => s)
  const url = config.storageUrl
  if (url?.startsWith('s3://')) {
    // loaded only when configured, so the embedded default never loads the AWS SDK; a literal
    // specifier, so the bundle (scripts/bundle.mjs) makes it a chunk of its own and finds it
    const { createS3BlobStore } = await import('./s3.js')
    const driver = wrap(createS3BlobStore(url))
    if (config.blobCacheBytes === 0) return driver
    if (o.mode !== 'serve') return removingCachedCopies(driver, config.blobCacheDir)
    return createBlobCache(driver, { dir: config.blobCacheDir, maxBytes: config.blobCacheBytes, events: o.cacheEvents }).catch(async (e) => {
      await driver.close()
      throw e
    })
  }
  return wrap(createLocalBlobStore(blobFolder(config.dataDir, url)))
}

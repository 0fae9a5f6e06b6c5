import { lazy } from '../../util/lazy.js'

/**
 * sharp, loaded on the first image. One libvips worker thread per operation and no operation
 * cache: memory stays predictable, and the variant semaphore (variants.ts) bounds how many run.
 */
export const loadSharp = lazy(async () => {
  const { default: sharp } = await import('sharp')
  sharp.concurrency(1)
  sharp.cache(false)
  return sharp
})

import crypto from 'node:crypto'
import { AppError } from '../../errors/app-error.js'
import { hasFrames, openImage } from './inspect.js'

/** Largest width or height a variant may ask for. */
export const MAX_VARIANT_SIDE = 4096
export const VARIANT_FORMATS = ['webp', 'avif', 'png', 'jpeg'] as const
export type VariantFormat = (typeof VARIANT_FORMATS)[number]

const MIME: Record<VariantFormat, string> = { webp: 'image/webp', avif: 'image/avif', png: 'image/png', jpeg: 'image/jpeg' }
const FORMAT_OF_TYPE: Record<string, VariantFormat | 'gif'> = {
  'image/webp': 'webp',
  'image/avif': 'avif',
  'image/png': 'png',
  'image/jpeg': 'jpeg',
  'image/gif': 'gif',
}

export interface VariantParams {
  w: number | null
  h: number | null
  format: VariantFormat | null
}

/** Reads ?w=, ?h=, ?format= (null when none is given); a bad value is a clear 400. */
export function parseVariantParams(query: Record<string, unknown>): VariantParams | null {
  const one = (v: unknown) => (Array.isArray(v) ? v[v.length - 1] : v)
  const side = (name: 'w' | 'h'): number | null => {
    const v = one(query[name])
    if (v === undefined || v === '') return null
    if (typeof v !== 'string' || !/^\d{1,5}$/.test(v) || Number(v) < 1 || Number(v) > MAX_VARIANT_SIDE) {
      throw new AppError('INVALID_PARAMETER', {
        params: { detail: { zh: `${name} 须为 1 到 ${MAX_VARIANT_SIDE} 的整数`, en: `${name} must be an integer from 1 to ${MAX_VARIANT_SIDE}` } },
      })
    }
    return Number(v)
  }
  const w = side('w')
  const h = side('h')
  let format: VariantFormat | null = null
  const f = one(query.format)
  if (f !== undefined && f !== '') {
    const name = typeof f === 'string' ? f.toLowerCase().replace(/^jpg$/, 'jpeg') : ''
    if (!(VARIANT_FORMATS as readonly string[]).includes(name)) {
      throw new AppError('INVALID_PARAMETER', {
        params: { detail: { zh: `format 须为以下值之一：${VARIANT_FORMATS.join('、')}`, en: `format must be one of ${VARIANT_FORMATS.join(', ')}` } },
      })
    }
    format = name as VariantFormat
  }
  return w === null && h === null && format === null ? null : { w, h, format }
}

/** Canonical text of a variant request, part of its cache key and ETag. */
export const variantKey = (p: VariantParams) => `w${p.w ?? ''}h${p.h ?? ''}f${p.format ?? ''}`

/** ETag of a variant: derived from the source digest and the parameters, known before any work. */
export const variantEtag = (digest: string, p: VariantParams) =>
  `"v${crypto
    .createHash('sha256')
    .update(`${digest}:${variantKey(p)}`)
    .digest('hex')
    .slice(0, 40)}"`

export interface Variant {
  bytes: Buffer
  contentType: string
}

export interface VariantOptions {
  /** Concurrent transformations (the rest wait). */
  concurrency?: number
  /** Waiting transformations before new ones are refused with 503. */
  maxQueue?: number
  /** Bytes of variants kept in memory (least recently used evicted first). */
  cacheBytes?: number
}

/** Who asks for a new variant: one client's transformations run one at a time, after `admit`. */
export interface VariantClient {
  /** The client's limit key (its address; an IPv6 client by its /64). */
  key: string
  /** Counts a new transformation against the client's windows; throws its 429 when they are full. */
  admit: () => Promise<void>
}

/** A client's transformations waiting behind its running one before more are refused (429 / 1206). */
export const CLIENT_WAITING = 4

const laneRefusal = () =>
  new AppError('RATE_LIMIT_CONCURRENT', {
    params: { limit: CLIENT_WAITING + 1, retry_after: 1 },
    extra: { retry_after: 1 },
    headers: { 'Retry-After': '1' },
  })

/**
 * Resized / converted variants, made with sharp: at most `concurrency` at a time, identical
 * concurrent requests share one transformation, and results are kept in an in-memory LRU
 * keyed by source digest + parameters (a replaced image has a new digest, so its variants
 * can never be served stale).
 */
export function createVariants(opts: VariantOptions = {}) {
  const concurrency = opts.concurrency ?? 2
  const maxQueue = opts.maxQueue ?? 64
  const cacheBytes = opts.cacheBytes ?? 64 * 1024 * 1024
  const cache = new Map<string, Variant>()
  let cached = 0
  const inflight = new Map<string, Promise<Variant>>()
  let running = 0
  const waiting: Array<() => void> = []
  const stats = { made: 0, hits: 0, shared: 0 }
  // per client: one transformation at a time, so one address holds at most one of the
  // `concurrency` slots and the others stay free for everyone else
  const lanes = new Map<string, Array<() => void>>()
  const laneFull = (key: string) => (lanes.get(key)?.length ?? -1) >= CLIENT_WAITING
  const enterLane = async (key: string) => {
    const lane = lanes.get(key)
    if (lane === undefined) {
      lanes.set(key, [])
      return
    }
    if (lane.length >= CLIENT_WAITING) throw laneRefusal()
    await new Promise<void>((resolve) => lane.push(resolve))
  }
  const leaveLane = (key: string) => {
    const next = lanes.get(key)?.shift()
    if (next) next()
    else lanes.delete(key)
  }

  const acquire = async () => {
    if (running < concurrency) {
      running++
      return
    }
    if (waiting.length >= maxQueue) throw new AppError('DEPENDENCY_UNAVAILABLE', { headers: { 'Retry-After': '1' } })
    await new Promise<void>((resolve) => waiting.push(resolve))
  }
  const release = () => {
    const next = waiting.shift()
    if (next) next()
    else running--
  }

  const remember = (key: string, v: Variant) => {
    if (v.bytes.length > cacheBytes / 8) return
    cache.set(key, v)
    cached += v.bytes.length
    for (const [k, old] of cache) {
      if (cached <= cacheBytes) break
      cache.delete(k)
      cached -= old.bytes.length
    }
  }

  async function transform(source: Buffer, sourceType: string, p: VariantParams): Promise<Variant> {
    const target = p.format ?? FORMAT_OF_TYPE[sourceType] ?? 'png'
    // animation survives into animated formats; other targets get the first frame
    const animated = hasFrames(sourceType) && (target === 'webp' || target === 'gif')
    let img = (await openImage(source, animated)).autoOrient().timeout({ seconds: 20 })
    if (p.w !== null || p.h !== null) {
      img = img.resize({ width: p.w ?? undefined, height: p.h ?? undefined, fit: 'inside', withoutEnlargement: true })
    }
    switch (target) {
      case 'webp':
        img = img.webp({ quality: 82 })
        break
      case 'avif':
        img = img.avif({ quality: 55, effort: 2 })
        break
      case 'png':
        img = img.png()
        break
      case 'jpeg':
        img = img.flatten({ background: '#ffffff' }).jpeg({ quality: 85, mozjpeg: true })
        break
      case 'gif':
        img = img.gif()
        break
    }
    const bytes = await img.toBuffer()
    return { bytes, contentType: target === 'gif' ? 'image/gif' : MIME[target] }
  }

  /** A cached variant, from memory only (the hot path); a hit counts as a use. */
  const peek = (digest: string, p: VariantParams): Variant | undefined => {
    const key = `${digest}:${variantKey(p)}`
    const hit = cache.get(key)
    if (hit !== undefined) {
      cache.delete(key)
      cache.set(key, hit)
      stats.hits++
    }
    return hit
  }

  return {
    stats,
    peek,
    /**
     * The variant of a source blob; `load` reads the source only when the variant is not
     * cached. A transformation this request starts is admitted by `client` first and runs in
     * the client's lane; a cached or already running variant costs the client nothing.
     */
    async get(digest: string, sourceType: string, p: VariantParams, load: () => Promise<Buffer>, client?: VariantClient): Promise<Variant> {
      const hit = peek(digest, p)
      if (hit) return hit
      const key = `${digest}:${variantKey(p)}`
      const pending = inflight.get(key)
      if (pending) {
        stats.shared++
        return pending
      }
      if (client !== undefined) {
        if (laneFull(client.key)) throw laneRefusal()
        await client.admit()
        // another request may have started (or finished) the same variant meanwhile
        const again = peek(digest, p) ?? inflight.get(key)
        if (again) return again
      }
      const work = (async () => {
        if (client !== undefined) await enterLane(client.key)
        try {
          await acquire()
        } catch (e) {
          if (client !== undefined) leaveLane(client.key)
          throw e
        }
        try {
          const source = await load()
          const v = await transform(source, sourceType, p).catch((e: unknown) => {
            if (e instanceof AppError) throw e
            throw new AppError('INVALID_PARAMETER', { params: { detail: { zh: '这张图片无法转换', en: 'this image cannot be transformed' } } })
          })
          stats.made++
          remember(key, v)
          return v
        } finally {
          release()
          if (client !== undefined) leaveLane(client.key)
        }
      })()
      inflight.set(key, work)
      try {
        return await work
      } finally {
        inflight.delete(key)
      }
    },
  }
}

export type Variants = ReturnType<typeof createVariants>

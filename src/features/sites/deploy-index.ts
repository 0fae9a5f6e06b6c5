import type { Db } from '../../db/kysely.js'
import { hostedFolderFile } from './folders-store.js'
import { dropOldest, oldestKey } from '../../util/oldest.js'

/** What the public host needs of one file of a deploy. */
export interface DeployFile {
  digest: string
  size: number
  content_type: string
  updated_at: number
}

export interface DeployIndexOptions {
  /** Paths held at most over all loaded deploys; the least recently used deploy goes first. */
  maxPaths?: number
  /** Lookups of one deploy's paths before it is loaded whole (a crawl, or a busy site). */
  loadAfter?: number
  /** Rows per query while a deploy is loaded (keyset pages: no long read on the event loop). */
  pageRows?: number
}

/** One loaded deploy: path -> row, the rows' fields in flat arrays (about 130 bytes a path). */
interface Loaded {
  rows: Map<string, number>
  /** Digests, 32 bytes each, binary. */
  digests: Buffer
  sizes: Float64Array
  mtimes: Float64Array
  types: Uint16Array
  typeNames: string[]
}

/**
 * The files of deploys, in memory, for the public host's lookups (resolver.ts). A deploy never
 * changes (deploys-store.ts: nothing updates its rows), so a loaded deploy is never stale and
 * needs no invalidation: which deploy a project serves is the resolver's question, asked
 * anew whenever the user's content changes.
 *
 * A deploy is loaded whole once `loadAfter` of its paths have been looked up (in pages of
 * `pageRows`, keyset by path, in the background); until then each path is one query, as
 * before, so a site visited once costs no more than that. Loaded, every further path (the
 * long tail: a crawler, a big docs site) is a Map lookup instead of a query. Bounded by
 * `maxPaths` over all deploys, least recently used first.
 */
export function createDeployIndex(db: Db, o: DeployIndexOptions = {}) {
  const maxPaths = o.maxPaths ?? 200_000
  const loadAfter = o.loadAfter ?? 32
  const pageRows = o.pageRows ?? 2000
  const loaded = new Map<string, Loaded>()
  /** Lookups per deploy not loaded yet (bounded: the oldest counters go first). */
  const asks = new Map<string, number>()
  const loading = new Set<string>()
  let held = 0
  const stats = { loads: 0, indexed: 0, queried: 0, dropped: 0 }

  const fileOf = (d: Loaded, i: number): DeployFile => ({
    digest: d.digests.toString('hex', i * 32, i * 32 + 32),
    size: d.sizes[i],
    content_type: d.typeNames[d.types[i]],
    updated_at: d.mtimes[i],
  })

  /**
   * Reads a deploy's rows page by page into the flat arrays (each page's row objects die
   * young: nothing but the paths outlives its page); kept only if it fits the budget.
   */
  async function load(deployId: string): Promise<void> {
    let cap = pageRows
    const d: Loaded = {
      rows: new Map(),
      digests: Buffer.alloc(cap * 32),
      sizes: new Float64Array(cap),
      mtimes: new Float64Array(cap),
      types: new Uint16Array(cap),
      typeNames: [],
    }
    const typeIds = new Map<string, number>()
    let n = 0
    let after = ''
    for (;;) {
      const page = await db.k
        .selectFrom('deploy_files')
        .select(['path', 'digest', 'size', 'content_type', 'updated_at'])
        .where('deploy_id', '=', deployId)
        .where('path', '>', after)
        .orderBy('path')
        .limit(pageRows)
        .execute()
      if (n + page.length > maxPaths) return
      if (n + page.length > cap) grow(d, (cap = Math.max(cap * 2, n + page.length)), n)
      for (const r of page) {
        let t = typeIds.get(r.content_type)
        if (t === undefined) {
          // more than 65,536 distinct types: not worth indexing
          if (typeIds.size === 0xffff) return
          typeIds.set(r.content_type, (t = d.typeNames.length))
          d.typeNames.push(r.content_type)
        }
        d.rows.set(r.path, n)
        d.digests.write(r.digest, n * 32, 32, 'hex')
        d.sizes[n] = Number(r.size)
        d.mtimes[n] = Number(r.updated_at)
        d.types[n] = t
        n++
      }
      if (page.length < pageRows) break
      after = page[page.length - 1].path
    }
    if (n < cap) grow(d, n, n)
    held += n
    loaded.set(deployId, d)
    stats.loads++
    while (held > maxPaths && loaded.size > 0) {
      const oldest = oldestKey(loaded) as string
      const od = loaded.get(oldest)!
      loaded.delete(oldest)
      held -= od.rows.size
      stats.dropped++
    }
  }

  /** Moves a loading deploy's arrays to `size` slots (more while loading, exactly `n` at the end). */
  function grow(d: Loaded, size: number, n: number): void {
    const digests = Buffer.alloc(size * 32)
    d.digests.copy(digests, 0, 0, n * 32)
    d.digests = digests
    const sizes = new Float64Array(size)
    sizes.set(d.sizes.subarray(0, n))
    d.sizes = sizes
    const mtimes = new Float64Array(size)
    mtimes.set(d.mtimes.subarray(0, n))
    d.mtimes = mtimes
    const types = new Uint16Array(size)
    types.set(d.types.subarray(0, n))
    d.types = types
  }

  return {
    stats,
    /** The file at `path` of a deploy, or undefined. */
    async file(deployId: string, path: string): Promise<DeployFile | undefined> {
      const d = loaded.get(deployId)
      if (d !== undefined) {
        // most recently used last: the oldest goes first when over budget
        loaded.delete(deployId)
        loaded.set(deployId, d)
        stats.indexed++
        const i = d.rows.get(path)
        return i === undefined ? undefined : fileOf(d, i)
      }
      const n = (asks.get(deployId) ?? 0) + 1
      if (n >= loadAfter && !loading.has(deployId)) {
        asks.delete(deployId)
        loading.add(deployId)
        // a failed load leaves the per-path queries in charge; the next lookups try again
        load(deployId)
          .catch(() => {})
          .finally(() => loading.delete(deployId))
      } else if (n < loadAfter) {
        asks.delete(deployId)
        asks.set(deployId, n)
        if (asks.size > 10_000) dropOldest(asks)
      }
      stats.queried++
      const r = await hostedFolderFile(db, deployId, path)
      return r && { digest: r.digest, size: Number(r.size), content_type: r.content_type, updated_at: Number(r.updated_at) }
    },
    /** Paths held now (for tests and /metrics). */
    size: () => held,
    /** Deploys held now. */
    deploys: () => loaded.size,
  }
}
export type DeployIndex = ReturnType<typeof createDeployIndex>

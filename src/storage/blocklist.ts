import type { BlobStore } from './blob-store.js'

/**
 * A blob store that refuses bytes whose digest is blocked (content taken down for abuse): the
 * one place every upload path of the server writes through (single files, folder batches,
 * images, hosted data), so a check here covers them all (`svc import`, whose store has no
 * such wrapper, asks the blocklist itself). The digest is known only after the last
 * byte, so the refused bytes were stored: they are either already kept as evidence or left
 * unreferenced for the sweeper; no row ever points to them. Paths that reference bytes already
 * stored without a put (archive deploys, publish, promote, a hosted-data default switch) ask
 * `admit` first: the same check, which image and data links also ask before serving a blob.
 * `anyBlocked` answers whether any of some digests is blocked.
 */
export function withBlocklist(store: BlobStore, anyBlocked: (digests: string[]) => Promise<boolean>, refusal: () => Error): BlobStore {
  return {
    ...bind(store),
    async put(body, opts) {
      const r = await store.put(body, opts)
      if (await anyBlocked([r.digest])) throw refusal()
      return r
    },
    ...(store.putBatch
      ? {
          async putBatch(bodies) {
            const rs = await store.putBatch!(bodies)
            if (await anyBlocked(rs.map((r) => r.digest))) throw refusal()
            return rs
          },
        }
      : {}),
    async admit(digests) {
      const all = [...new Set(digests)]
      if (all.length > 0 && (await anyBlocked(all))) throw refusal()
    },
  }
}

/** The store's methods bound to it (a spread alone would lose `this`). */
function bind(s: BlobStore): BlobStore {
  return {
    kind: s.kind,
    put: s.put.bind(s),
    get: s.get.bind(s),
    read: s.read.bind(s),
    exists: s.exists.bind(s),
    modifiedMs: s.modifiedMs.bind(s),
    delete: s.delete.bind(s),
    list: s.list.bind(s),
    cleanTemp: s.cleanTemp.bind(s),
    ping: s.ping.bind(s),
    close: s.close.bind(s),
    localFile: s.localFile.bind(s),
    ...(s.localPathNow ? { localPathNow: s.localPathNow.bind(s) } : {}),
  }
}

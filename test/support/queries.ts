import type { KyselyPlugin } from 'kysely'
import type { Db } from '../../src/db/kysely.js'

/** The service's database, counting the queries run through it (for "no query" checks). */
export function counting(db: Db): { db: Db; queries: () => number } {
  let n = 0
  const plugin: KyselyPlugin = {
    transformQuery: (args) => {
      n++
      return args.node
    },
    transformResult: async (args) => args.result,
  }
  return { db: { ...db, k: db.k.withPlugin(plugin) }, queries: () => n }
}

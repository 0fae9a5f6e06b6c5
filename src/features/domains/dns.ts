import { Resolver } from 'node:dns/promises'
import type { Text } from '../../errors/text.js'

/** The TXT strings at a name (each record's chunks joined), or why they could not be read (both languages). */
export type TxtAnswer = { ok: true; values: string[] } | { ok: false; reason: Text }

/**
 * TXT lookups for domain verification, through DNS_RESOLVER when it is set (tests point it at
 * a DNS server on loopback), else the system's resolvers. Each lookup is bounded: 3 s per try,
 * 2 tries. NXDOMAIN and "no data" are answers (no record), not failures.
 */
export function createTxtLookup(servers: readonly string[] | null) {
  return async function txt(name: string): Promise<TxtAnswer> {
    const r = new Resolver({ timeout: 3000, tries: 2 })
    if (servers) r.setServers([...servers])
    try {
      const recs = await r.resolveTxt(name)
      return { ok: true, values: recs.map((chunks) => chunks.join('')) }
    } catch (e) {
      const code = (e as { code?: string }).code
      if (code === 'ENOTFOUND' || code === 'ENODATA') return { ok: true, values: [] }
      const why = code ?? 'error'
      return { ok: false, reason: { zh: `${name} 的 DNS 查询失败（${why}），请稍后再试`, en: `the DNS lookup of ${name} failed (${why}); try again later` } }
    } finally {
      r.cancel()
    }
  }
}
export type TxtLookup = ReturnType<typeof createTxtLookup>

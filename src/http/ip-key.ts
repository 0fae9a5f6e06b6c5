import net from 'node:net'

function ipv6Groups(ip: string): number[] | null {
  let s = ip.split('%')[0]
  const v4 = /^(.*:)(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(s)
  if (v4) {
    const b = v4.slice(2).map(Number)
    s = `${v4[1]}${((b[0] << 8) | b[1]).toString(16)}:${((b[2] << 8) | b[3]).toString(16)}`
  }
  const halves = s.split('::')
  if (halves.length > 2) return null
  const head = halves[0] ? halves[0].split(':') : []
  const tail = halves.length === 2 ? (halves[1] ? halves[1].split(':') : []) : null
  const groups = tail === null ? head : [...head, ...Array(8 - head.length - tail.length).fill('0'), ...tail]
  if (groups.length !== 8) return null
  return groups.map((g) => parseInt(g, 16))
}

export type Addr = { v: 4; bytes: number[] } | { v: 6; groups: number[] }

/** An IPv4 or IPv6 address parsed; IPv4-mapped IPv6 counts as IPv4. Null: not an address. */
export function parseIp(ip: string): Addr | null {
  if (net.isIPv4(ip)) return { v: 4, bytes: ip.split('.').map(Number) }
  if (!net.isIPv6(ip)) return null
  const g = ipv6Groups(ip)
  if (!g) return null
  // IPv4-mapped (::ffff:a.b.c.d) counts as IPv4
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) return { v: 4, bytes: [g[6] >> 8, g[6] & 255, g[7] >> 8, g[7] & 255] }
  return { v: 6, groups: g }
}

/** `keep` groups of an IPv6 address as the network `/bits`. */
export const v6Prefix = (groups: number[], keep: number, bits: number) =>
  `${groups
    .slice(0, keep)
    .map((x) => x.toString(16))
    .join(':')}::/${bits}`

/**
 * The key every per-client limit counts by (API rate limits, login failures, sign-ups, visitor
 * passwords, abuse reports, form submissions): the IPv4 address, or the IPv6 /64 (one
 * subscriber's network: the addresses inside it cost nothing to change). Never stored.
 */
export function ipLimitKey(ip: string): string {
  // no colon: dotted IPv4 (net.isIPv4 takes only the canonical form, which parsing would give
  // back unchanged) or no address at all; either is its own key, without parsing or allocating
  if (!ip.includes(':')) return ip
  const a = parseIp(ip)
  if (!a) return ip
  return a.v === 4 ? a.bytes.join('.') : v6Prefix(a.groups, 4, 64)
}

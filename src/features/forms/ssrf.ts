import dns from 'node:dns'
import net from 'node:net'
import type { LookupFunction } from 'node:net'
import ipaddr from 'ipaddr.js'
import { AppError } from '../../errors/app-error.js'
import type { Text } from '../../errors/text.js'

/**
 * Addresses a webhook may not reach when the operator forbids private targets
 * (WEBHOOK_BLOCK_PRIVATE, default on): loopback, private, shared, link-local (cloud metadata),
 * multicast, reserved and unspecified ranges, in IPv4 and IPv6 (IPv4-mapped included). Two
 * checks, either one refuses: this list, and ipaddr.js's classification of IANA's
 * special-purpose registries (only 'unicast', a global address, passes), which also covers
 * the forms that embed an IPv4 address (6to4, Teredo, IPv4-translated) and documentation ranges.
 */
const BLOCKED = new net.BlockList()
for (const [a, p] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  BLOCKED.addSubnet(a, p, 'ipv4')
for (const [a, p] of [
  // IPv4-compatible addresses (::a.b.c.d, deprecated), :: and ::1 among them
  ['::', 96],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['64:ff9b::', 96],
  ['2001:db8::', 32],
] as const)
  BLOCKED.addSubnet(a, p, 'ipv6')

export function isForbiddenAddress(ip: string): boolean {
  const v = net.isIP(ip)
  if (v === 0) return true
  let parsed = ipaddr.parse(ip)
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address()
  if (parsed.range() !== 'unicast') return true
  return parsed.kind() === 'ipv4' ? BLOCKED.check(parsed.toString(), 'ipv4') : BLOCKED.check(parsed.toString(), 'ipv6')
}

const forbidden = (host: string, ip: string) =>
  new AppError('WEBHOOK_URL_FORBIDDEN', {
    params: { detail: { zh: `${host} 解析为 ${ip}，属于内网、回环或保留地址`, en: `${host} resolves to ${ip}, a private, loopback or reserved address` } },
  })
/** 400 / 1420 saying what is wrong with the URL, in both languages. */
const invalid = (detail: Text) => new AppError('WEBHOOK_URL_INVALID', { params: { detail } })

/** A webhook URL: absolute http(s), no credentials, at most 2048 characters. */
export function parseWebhookUrl(raw: unknown): URL {
  if (typeof raw !== 'string' || raw.trim() === '') throw invalid({ zh: '缺少 url（http 或 https 地址）', en: 'url is required (an http or https URL)' })
  const s = raw.trim()
  if (s.length > 2048 || /[\s\u0000-\u001f\u007f]/.test(s))
    throw invalid({ zh: '最多 2048 个字符，且不能包含空格或控制字符', en: 'at most 2048 characters, without spaces or control characters' })
  let u: URL
  try {
    u = new URL(s)
  } catch {
    throw invalid({ zh: '不是完整的 URL', en: 'not an absolute URL' })
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw invalid({ zh: `只允许 http 和 https，不允许 "${u.protocol}"`, en: `only http and https are allowed, not "${u.protocol}"` })
  if (u.username || u.password)
    throw invalid({ zh: 'URL 中不能带凭据；请改为校验签名', en: 'credentials in the URL are not allowed; check the signature instead' })
  return u
}

/** Refuses a URL whose host is, or resolves to, a forbidden address (when `block`). */
export async function checkTarget(u: URL, block: boolean): Promise<void> {
  if (!block) return
  const host = u.hostname.replace(/^\[|\]$/g, '')
  if (net.isIP(host)) {
    if (isForbiddenAddress(host)) throw forbidden(host, host)
    return
  }
  let addrs: dns.LookupAddress[]
  try {
    addrs = await dns.promises.lookup(host, { all: true, verbatim: true })
  } catch {
    throw invalid({ zh: `主机 ${host} 无法解析`, en: `the host ${host} does not resolve` })
  }
  for (const a of addrs) if (isForbiddenAddress(a.address)) throw forbidden(host, a.address)
}

/**
 * dns.lookup for delivery connections: with `block`, every address the name resolves to is
 * checked at connect time, so a name that changes to a private address after the URL was
 * saved (DNS rebinding) is refused too.
 */
export function guardedLookup(block: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0)
      const list = addresses
      const bad = block ? list.find((a) => isForbiddenAddress(a.address)) : undefined
      if (bad) return callback(Object.assign(new Error(`${hostname} resolves to ${bad.address}, a forbidden address`), { code: 'EFORBIDDEN' }), '', 0)
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, list)
      callback(null, list[0].address, list[0].family)
    })
  }
}

import net from 'node:net'
import { domainToASCII } from 'node:url'
import type { Text } from '../../errors/text.js'

/** The TXT record that proves control of a domain: name and value. */
export const challengeName = (domain: string): string => `_svc-challenge.${domain}`
export const challengeValue = (token: string): string => `svc-verify=${token}`

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/

const IP_ADDRESS: Text = { zh: 'IP 地址不是域名', en: 'an IP address is not a domain' }
const notHostName = (input: string): Text => ({ zh: `"${input}" 不是有效的主机名`, en: `"${input}" is not a valid host name` })

/**
 * A custom domain as stored: lowercased ASCII (IDNs in punycode), no port, no trailing dot,
 * two labels at least, no IP literal; or the reason it is not one, in both languages.
 */
export function parseDomain(input: unknown): { ok: true; name: string } | { ok: false; reason: Text } {
  if (typeof input !== 'string' || input.trim() === '')
    return { ok: false, reason: { zh: '缺少 domain，须为主机名，如 www.example.com', en: 'send "domain", a host name such as www.example.com' } }
  let raw = input.trim().toLowerCase()
  if (raw.endsWith('.')) raw = raw.slice(0, -1)
  if (/[/:@?#\s]/.test(raw))
    return {
      ok: false,
      reason: { zh: `"${input}" 不是单纯的主机名（不能带协议、端口或路径）`, en: `"${input}" is not a bare host name (no scheme, port or path)` },
    }
  if (net.isIP(raw) !== 0) return { ok: false, reason: IP_ADDRESS }
  const name = domainToASCII(raw)
  if (name === '' || name.length > 253) return { ok: false, reason: notHostName(input) }
  const labels = name.split('.')
  if (labels.length < 2)
    return { ok: false, reason: { zh: '自定义域名至少需要两段（如 example.com）', en: 'a custom domain needs at least two labels (example.com)' } }
  if (!labels.every((l) => LABEL.test(l))) return { ok: false, reason: notHostName(input) }
  if (/^\d+$/.test(labels[labels.length - 1])) return { ok: false, reason: IP_ADDRESS }
  return { ok: true, name }
}

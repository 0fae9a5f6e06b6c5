import net from 'node:net'
import { domainToASCII } from 'node:url'

/** The TXT record that proves control of a domain: name and value. */
export const challengeName = (domain: string): string => `_svc-challenge.${domain}`
export const challengeValue = (token: string): string => `svc-verify=${token}`

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/

/**
 * A custom domain as stored: lowercased ASCII (IDNs in punycode), no port, no trailing dot,
 * two labels at least, no IP literal; or the reason it is not one.
 */
export function parseDomain(input: unknown): { ok: true; name: string } | { ok: false; reason: string } {
  if (typeof input !== 'string' || input.trim() === '') return { ok: false, reason: 'send "domain", a host name such as www.example.com' }
  let raw = input.trim().toLowerCase()
  if (raw.endsWith('.')) raw = raw.slice(0, -1)
  if (/[/:@?#\s]/.test(raw)) return { ok: false, reason: `"${input}" is not a bare host name (no scheme, port or path)` }
  if (net.isIP(raw) !== 0) return { ok: false, reason: 'an IP address is not a domain' }
  const name = domainToASCII(raw)
  if (name === '' || name.length > 253) return { ok: false, reason: `"${input}" is not a valid host name` }
  const labels = name.split('.')
  if (labels.length < 2) return { ok: false, reason: 'a custom domain needs at least two labels (example.com)' }
  if (!labels.every((l) => LABEL.test(l))) return { ok: false, reason: `"${input}" is not a valid host name` }
  if (/^\d+$/.test(labels[labels.length - 1])) return { ok: false, reason: 'an IP address is not a domain' }
  return { ok: true, name }
}

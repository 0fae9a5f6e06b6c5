/**
 * Caddy's internal CA dates a certificate from the instant it signs it, with no backdating, and
 * OpenSSL checks validity against time(2), the kernel's coarse clock, which can lag the precise
 * one by a tick. A handshake in the same second as an on-demand issue can then find the new
 * certificate "not yet valid". Such an attempt is made once more, past the next second; any
 * other outcome, failures included, is returned as it is.
 */
export async function pastNotYetValid<T>(attempt: () => Promise<T>, notYetValid: (r: T) => boolean = () => false): Promise<T> {
  const first = await attempt().then(
    (r) => ({ r, again: notYetValid(r) || isNotYetValid(r) }),
    (e: unknown) => ({ e, again: isNotYetValid(e) }),
  )
  if (!first.again) {
    if ('e' in first) throw first.e
    return first.r
  }
  await new Promise((r) => setTimeout(r, 1100))
  return attempt()
}

/** Node's verdict on a certificate whose notBefore is still ahead of the clock. */
function isNotYetValid(x: unknown): boolean {
  return x instanceof Error && (x as Error & { code?: string }).code === 'CERT_NOT_YET_VALID'
}

import type { ApiKeys } from './api-keys.js'
import { AppError } from '../errors/app-error.js'

/** An API key's shape (tokens.ts): the prefix, then 60 letters and digits. */
const KEY_TOKEN = /svc_[A-Za-z0-9]{60}/g
export const KEY_LENGTH = 64
/** Key-shaped tokens kept per file: enough for any real page, bounded for any upload. */
const MAX_KEY_TOKENS = 16

/** Adds the API-key-shaped tokens in `bytes` to `into` (up to MAX_KEY_TOKENS). */
export function collectKeyTokens(bytes: Buffer, into: Set<string>): void {
  if (into.size >= MAX_KEY_TOKENS || bytes.indexOf('svc_') < 0) return
  for (const m of bytes.toString('latin1').matchAll(KEY_TOKEN)) {
    into.add(m[0])
    if (into.size >= MAX_KEY_TOKENS) return
  }
}

/** A file on its way to a site or a public link, with the API-key-shaped tokens its bytes hold. */
export interface Scanned {
  /** The file's name as the refusal shows it (its path in a project). */
  name: string
  keyTokens: Iterable<string>
}

/**
 * The refusal (1444, KEY_IN_CONTENT) of each file that holds a live API key able to write,
 * by file name; empty when none does. Every way onto a site (single files, folder batches,
 * archive deploys, MCP) and every hosted-data version asks before anything is committed, so
 * public content never serves such a key (decision 223). Read-only, disabled and expired keys
 * pass: they write nothing.
 */
export async function keyLeaks(apiKeys: ApiKeys, userId: string, files: readonly Scanned[]): Promise<Map<string, AppError>> {
  const out = new Map<string, AppError>()
  const withTokens = files.filter((f) => [...f.keyTokens].length > 0)
  if (withTokens.length === 0) return out
  const live = await apiKeys.liveWriters(
    withTokens.flatMap((f) => [...f.keyTokens]),
    userId,
  )
  for (const f of withTokens) {
    const hit = [...f.keyTokens].find((t) => live.has(t))
    if (hit !== undefined) out.set(f.name, new AppError('KEY_IN_CONTENT', { params: { file: f.name, key: live.get(hit)! } }))
  }
  return out
}

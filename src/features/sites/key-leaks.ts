import type { ApiKeys } from '../../auth/api-keys.js'
import { AppError } from '../../errors/app-error.js'

/** A file on its way to a site, with the API-key-shaped tokens its bytes hold (sniff.ts). */
export interface Scanned {
  /** The file's name as the refusal shows it (its path in a project). */
  name: string
  keyTokens: Iterable<string>
}

/**
 * The refusal (1444, KEY_IN_CONTENT) of each file that holds a live API key able to write,
 * by file name; empty when none does. Every way onto a site (single files, folder batches,
 * archive deploys, MCP) asks before anything is committed, so a page never serves such a key
 * (decision 223). Read-only, disabled and expired keys pass: they write nothing.
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

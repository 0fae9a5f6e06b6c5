/**
 * The archive deploy's manifest as both its ends read it (docs/api/deploys.md): where it is in
 * the archive, and a limit the server refuses beyond that `svc deploy` checks before it reads
 * the folder.
 */

/** The archive's first entry: the manifest. */
export const MANIFEST_ENTRY = 'svc-deploy.json'

/** The longest deploy message, in UTF-16 units as String.length counts (1328 above it). */
export const MESSAGE_MAX = 500

/**
 * The archive deploy's manifest as both its ends read it (docs/api/deploys.md): the server
 * refuses what these limits do not allow, and `svc deploy` refuses it before reading the folder.
 */

/** The longest deploy message, in UTF-16 units as String.length counts (1328 above it). */
export const MESSAGE_MAX = 500

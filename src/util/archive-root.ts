/**
 * Which folder of an archive a deploy takes (`svc deploy site.zip` and the API's zip deploy):
 * the archive's root, unless the root holds no index.html but exactly one folder (what
 * `zip -r site.zip site` makes), which is then the site, as Netlify takes such a zip.
 * Dot-names and macOS's `__MACOSX/` at the root count for nothing: a deploy leaves them out.
 */

/** One name at an archive's root, and whether it is a folder. */
export interface RootEntry {
  name: string
  dir: boolean
}

/** The one folder to deploy in place of the root, or null: the root itself. */
export function archiveTopFolder(top: Iterable<RootEntry>): string | null {
  const seen = [...top].filter((e) => !e.name.startsWith('.') && e.name !== '__MACOSX')
  if (seen.some((e) => e.name === 'index.html')) return null
  return seen.length === 1 && seen[0].dir ? seen[0].name : null
}

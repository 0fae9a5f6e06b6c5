import fsp from 'node:fs/promises'
import path from 'node:path'
import { loadsFromRoot } from '../../util/html.js'

/**
 * Where a published project is, as `svc deploy` says it. A project is served at
 * /{project}/ of its user's origin (site_url; website_url is its path form, for scripts) and
 * at the root of its own origin (origin_url). A site built for / (Vite's default base,
 * most generators') loads its files as /assets/..., which only the root of an origin has.
 */
export interface SiteLinks {
  website_url: string | null
  site_url: string | null
  origin_url: string | null
  /** The folder's index.html loads files by root-absolute paths (/assets/app.js). */
  built_for_root: boolean
}

/** Whether the folder's index.html (when there is one) loads files by root-absolute paths. */
export async function builtForRoot(dir: string): Promise<boolean> {
  const html = await fsp.readFile(path.join(dir, 'index.html'), 'utf8').catch(() => null)
  return html !== null && loadsFromRoot(html)
}

/** The lines naming a live project's URLs: `{lead}: {the URL to open}`, then the others. */
export function linkLines(lead: string, r: SiteLinks): string[] {
  const fromRoot = r.built_for_root && r.origin_url !== null
  const open = fromRoot ? r.origin_url : (r.site_url ?? r.website_url ?? '(the server gave no URL)')
  const lines = [`${lead}: ${open}`]
  if (fromRoot) {
    lines.push('  (its index.html loads files from /, so open it at the root of its own origin)')
    if (r.site_url) lines.push(`  also at ${r.site_url} (under its user's origin, for sites built for /{project}/)`)
  } else if (r.origin_url) lines.push(`  at the root of its own origin: ${r.origin_url} (for sites built for /)`)
  else if (r.built_for_root && r.site_url)
    lines.push(
      '  (its index.html loads files from /, which only the root of an origin has: deploy it under a name of lowercase letters, digits and - to give it an origin of its own, or build it for /{project}/)',
    )
  if (r.site_url && r.website_url) lines.push(`  for scripts: ${r.website_url} (browsers are sent to ${r.site_url})`)
  return lines
}

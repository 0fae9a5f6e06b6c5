import fsp from 'node:fs/promises'
import path from 'node:path'
import { builtForRoot as htmlBuiltForRoot, decodedPath, moduleScriptSources, ROOT_CHECK_PAGES, rootResources, sourceOnlyModule } from '../../util/html.js'

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
  /** The folder's index.html or 404.html loads files by root-absolute paths (/assets/app.js). */
  built_for_root: boolean
}

/**
 * Whether the folder is a site built for / (util/html.ts builtForRoot): its index.html or its
 * 404.html loads files of the folder by root-absolute paths. The server applies the same rule
 * to a published project, and sends browsers from its user's origin to its own.
 */
export async function builtForRoot(dir: string): Promise<boolean> {
  const root = path.resolve(dir)
  const has = async (p: string): Promise<boolean> => {
    const rel = decodedPath(p)
    if (rel === null) return false
    const file = path.resolve(root, `.${rel}`)
    if (!file.startsWith(root + path.sep)) return false
    return (await fsp.stat(file).catch(() => null))?.isFile() === true
  }
  // without an index the folder is no site to open (publishing refuses it)
  if ((await fsp.stat(path.join(dir, 'index.html')).catch(() => null))?.isFile() !== true) return false
  for (const name of ROOT_CHECK_PAGES) {
    const html = await fsp.readFile(path.join(dir, name), 'utf8').catch(() => null)
    if (html !== null && (await htmlBuiltForRoot(html, has))) return true
  }
  return false
}

/** The lines naming a live project's URLs: `{lead}: {the URL to open}`, then the others. */
export function linkLines(lead: string, r: SiteLinks): string[] {
  const fromRoot = r.built_for_root && r.origin_url !== null
  const open = fromRoot ? r.origin_url : (r.site_url ?? r.website_url ?? '(the server gave no URL)')
  const lines = [`${lead}: ${open}`]
  // the server sends browsers from the user's origin to the project's own one (decision 75)
  if (fromRoot) lines.push(`  (the site loads files from /: browsers opening ${r.site_url ?? r.website_url} are sent here)`)
  else if (r.origin_url) lines.push(`  at the root of its own origin: ${r.origin_url} (for sites built for /)`)
  else if (r.built_for_root && r.site_url)
    lines.push(
      '  (the site loads files from /, which only the root of an origin has: deploy it under a name of lowercase letters, digits and - to give it an origin of its own, or build it for /{project}/)',
    )
  if (r.site_url && r.website_url) lines.push(`  for scripts: ${r.website_url} (browsers are sent to ${fromRoot ? open : r.site_url})`)
  return lines
}

/** A host name of two labels or more (a GitHub Pages `CNAME` holds one, its custom domain). */
const HOST_NAME = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?$/

/**
 * The custom domain a GitHub Pages site names in the `CNAME` file at its root (one host name,
 * its first line), lowercased and without a final dot; null when the folder has none or it
 * names no host. GitHub Pages takes the file as the site's domain; here it is a file like any
 * other, and a domain is added with `svc domain add`.
 */
export async function cnameDomain(dir: string): Promise<string | null> {
  const file = path.join(dir, 'CNAME')
  const st = await fsp.stat(file).catch(() => null)
  if (st === null || !st.isFile() || st.size > 1024) return null
  const text = await fsp.readFile(file, 'utf8').catch(() => '')
  const first = text.split(/\r?\n/).find((l) => l.trim() !== '') ?? ''
  const host = first.trim().toLowerCase().replace(/\.$/, '')
  return HOST_NAME.test(host) ? host : null
}

/**
 * The note `svc deploy` prints when the folder's `CNAME` names a domain that does not serve
 * the project here (`domains`: the account's, as `GET /api/domains` lists them), or null.
 */
export function cnameNote(domain: string, project: string, domains: ReadonlyArray<{ domain: string; project: string }>): string | null {
  const known = domains.find((d) => d.domain === domain)
  if (known?.project === project) return null
  const what = `CNAME names ${domain}, the site's domain on GitHub Pages; here that file is served as it is and sets nothing`
  if (known) return `note: ${what}. ${domain} serves your project ${known.project}`
  return `note: ${what}. To serve the site there: svc domain add ${domain} --project ${project}`
}

/** Front matter: the first line of a page Jekyll renders, as Jekyll reads it. */
const FRONT_MATTER = /^(\uFEFF)?---[ \t]*\r?\n/

/**
 * What makes the folder a Jekyll site's source rather than its build, or null: `_config.yml` at
 * its root (Jekyll never writes it into `_site/`), no `.nojekyll` (GitHub Pages' own way to
 * say "serve these files as they are"), and a root `index.md` or `index.markdown`, or an
 * `index.html` that starts with front matter. GitHub Pages builds such a folder; here its
 * templates would be served as they are (`{{ content }}`, `---` lines).
 */
export async function jekyllSource(dir: string): Promise<string | null> {
  const isFile = async (name: string) => (await fsp.stat(path.join(dir, name)).catch(() => null))?.isFile() === true
  if (!(await isFile('_config.yml')) || (await fsp.lstat(path.join(dir, '.nojekyll')).catch(() => null)) !== null) return null
  for (const name of ['index.md', 'index.markdown']) if (await isFile(name)) return `_config.yml and ${name}`
  const head = await fsp
    .open(path.join(dir, 'index.html'), 'r')
    .then(async (fd) => {
      try {
        const buf = Buffer.alloc(16)
        return buf.subarray(0, (await fd.read(buf, 0, 16, 0)).bytesRead).toString('utf8')
      } finally {
        await fd.close()
      }
    })
    .catch(() => '')
  return FRONT_MATTER.test(head) ? '_config.yml, and index.html starts with front matter' : null
}

/**
 * The base a site was built for, when it is one folder other than `/` (`/blog/`: Jekyll's
 * `baseurl`, Hugo's `baseURL` path, Vite's `base`), or null: its index.html loads by
 * root-absolute paths files that the folder holds one segment up (`/blog/assets/main.css` for
 * `assets/main.css`) and not at that path. GitHub Pages serves a project site under
 * `/{repository}/`, so such a site works here under `/{project}/` only when the project has
 * that name.
 */
export async function builtForBase(dir: string): Promise<string | null> {
  const html = await fsp.readFile(path.join(dir, 'index.html'), 'utf8').catch(() => null)
  if (html === null) return null
  const root = path.resolve(dir)
  const has = async (rel: string): Promise<boolean> => {
    const file = path.resolve(root, `.${rel}`)
    return file.startsWith(root + path.sep) && (await fsp.stat(file).catch(() => null))?.isFile() === true
  }
  for (const p of rootResources(html)) {
    const decoded = decodedPath(p) ?? ''
    const m = /^\/([^/]+)(\/.+)$/.exec(decoded)
    if (m !== null && !(await has(decoded)) && (await has(m[2]))) return m[1]
  }
  return null
}

const VITE_CONFIG = ['vite.config.js', 'vite.config.mjs', 'vite.config.cjs', 'vite.config.ts', 'vite.config.mts', 'vite.config.cts']

/**
 * What makes the folder the source of an app a bundler builds (Vite, Parcel) rather than its
 * build, or null: its root index.html loads, as a module script, a file of the folder that is
 * JSX, TypeScript, a Vue or Svelte component (`/src/main.tsx`), which no browser runs; or one
 * of any kind while the folder is a Vite project (a vite.config file, or a package.json whose
 * `build` script runs vite), whose entry imports CSS and components only the build turns into
 * files a browser runs. A build (`dist/`) loads `/assets/index-HASH.js` and holds neither.
 */
/**
 * Text of the folder's own files (a build script, a script's src) as the error shows it: control
 * characters as `?` (a cloned repository's file may hold escape sequences that would act on the
 * terminal), at most 80 characters.
 */
const shownText = (t: string) => {
  const plain = t.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?')
  return plain.length > 80 ? `${plain.slice(0, 79)}…` : plain
}

export async function bundlerSource(dir: string): Promise<{ why: string; vite: boolean } | null> {
  const html = await fsp.readFile(path.join(dir, 'index.html'), 'utf8').catch(() => null)
  if (html === null) return null
  const root = path.resolve(dir)
  const isFile = async (rel: string) => (await fsp.stat(path.join(root, rel)).catch(() => null))?.isFile() === true
  const entries: string[] = []
  for (const src of moduleScriptSources(html)) {
    if (src.startsWith('//') || /^[a-z][a-z0-9+.-]*:/i.test(src)) continue
    const rel = decodedPath(src.replace(/[?#].*$/s, ''))
    if (rel === null) continue
    const file = path.resolve(root, rel.startsWith('/') ? `.${rel}` : rel)
    if (file.startsWith(root + path.sep) && (await isFile(path.relative(root, file)))) entries.push(src)
  }
  if (entries.length === 0) return null
  let config: string | null = null
  for (const name of VITE_CONFIG) if (config === null && (await isFile(name))) config = name
  if (config === null && (await isFile('package.json'))) {
    const pkg = await fsp
      .readFile(path.join(root, 'package.json'), 'utf8')
      .then((t) => JSON.parse(t) as { scripts?: Record<string, unknown> })
      .catch(() => null)
    const build = pkg?.scripts?.build
    if (typeof build === 'string' && /(?:^|[\s;&|/])vite(?:\s|$)/.test(build)) config = `package.json's build script "${shownText(build)}"`
  }
  const source = entries.find(sourceOnlyModule)
  if (source !== undefined) return { why: `index.html loads ${shownText(source)}, which browsers do not run before a build`, vite: config !== null }
  if (config !== null) return { why: `${config}, and index.html loads ${shownText(entries[0])}`, vite: true }
  return null
}

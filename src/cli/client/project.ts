/**
 * A deploy's project name: the folder's (or the repository's, for a build folder, or for an
 * archive file named after one) unless --project gives one, and the names the server could
 * not take. Its own module, without the deploy code: `svc deploys` and
 * `svc rollback` name the current folder's project too, and every command's start loads
 * what they import (the deploy code's content-type table is the largest part of the CLI).
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { checkName, NAME_RULE } from '../../features/sites/paths.js'
import { encodePath, type ApiClient } from './api.js'
import { CliError } from './errors.js'

/**
 * The names build tools give the folder they write a site to (Vite, webpack and Astro's `dist`,
 * Create React App's `build`, Next's `out`, Jekyll and Eleventy's `_site`, Hugo and Gatsby's
 * `public`, MkDocs' `site`, Nuxt's `.output/public`, Sphinx's `_build`), compared in lower case.
 */
export const BUILD_FOLDERS: ReadonlySet<string> = new Set(['dist', 'build', 'out', 'output', '.output', '_site', 'public', 'site', '_build'])

/**
 * The project a folder deploys to when --project is not given: the folder's name, or for a
 * build folder (`dist`, `my-app/.output/public`) the name of the nearest folder above it that
 * is not one (the repository's), when that is a project name; `from` is then the build folder
 * left out. The walk stops at the home, temporary and root folders, whose names never name a
 * project: the folder's own name is kept. The same path gives the same name, so `svc deploys`
 * and `svc rollback` run where `svc deploy .` ran name its project.
 */
export function defaultProject(dirReal: string): { name: string; from: string | null } {
  const own = path.basename(dirReal)
  const stops = new Set([path.parse(dirReal).root, os.homedir(), os.tmpdir(), realOr(os.homedir()), realOr(os.tmpdir())])
  let dir = dirReal
  while (BUILD_FOLDERS.has(path.basename(dir).toLowerCase())) {
    dir = path.dirname(dir)
    if (stops.has(dir)) return { name: own, from: null }
  }
  if (dir === dirReal || !checkName(path.basename(dir)).ok) return { name: own, from: null }
  return { name: path.basename(dir), from: path.relative(dir, dirReal) }
}

/**
 * What a command says (on stderr) when it names the project after the folder above a build
 * folder; `archive`: the file (`dist.zip`) that stands for the build folder.
 */
export function defaultProjectNote(p: { name: string; from: string | null }, archive?: string): string | null {
  if (p.from === null) return null
  const held = archive === undefined ? `${p.from}/` : path.join(path.dirname(p.from), archive)
  return `note: project ${p.name}, named after the folder that holds ${held} (a build folder's name is not the site's); choose another with --project NAME`
}

/**
 * The project a folder deploys to without --project, for every command that names it from the
 * current folder: defaultProject's, said on stderr when it is not the folder's own name. When
 * the build folder's own name is also one of the caller's projects (`dist`, deployed before
 * decision 270 named build folders after the folder above), the line says that project is left
 * as it is and how to deploy there: never deployed into without --project, since another
 * repository's `dist` may be the one that made it. One request, only for a build folder.
 */
export async function folderProjectOf(api: ApiClient, dirReal: string, note: (line: string) => void, archive?: string): Promise<string> {
  const named = defaultProject(dirReal)
  const line = defaultProjectNote(named, archive)
  if (line === null) return named.name
  const own = path.basename(dirReal)
  const existing = checkName(own).ok && (await api.get(`/api/folders/${encodePath(own)}/deploys`, { okStatuses: [403, 404] })).status === 200
  note(existing ? `${line}; your project ${own} is left as it is: --project ${own} deploys there` : line)
  return named.name
}

/** The name an archive file stands for: its own without the extension (`dist.zip`: `dist`). */
export function archiveBase(file: string): string {
  return path.basename(file).replace(/\.(zip|tgz|tar\.gz|tar)$/i, '')
}

/**
 * The project an archive file deploys to without --project: the one the folder it is named
 * after, beside it, would deploy to (folderProjectOf), so `my-app/dist.zip` deploys as
 * `my-app/dist/` does, to `my-app`, and `site.zip` elsewhere to `site`. The folder holding the
 * file is taken by its real path, as a deployed folder is; the file's own name is kept.
 */
export async function archiveProjectOf(api: ApiClient, file: string, note: (line: string) => void): Promise<string> {
  const base = archiveBase(file)
  if (base === '') return base
  const dirReal = path.join(realOr(path.dirname(path.resolve(file))), base)
  return folderProjectOf(api, dirReal, note, path.basename(file))
}

function realOr(dir: string): string {
  try {
    return fs.realpathSync(dir)
  } catch {
    return dir
  }
}

/**
 * Refuses a project name the server could not take as one name (checked before any request),
 * by the server's own rule (checkName), so the client takes every name the server and the MCP
 * tools take. Returns the name as the server stores it (NFC).
 */
export function checkProjectName(project: string): string {
  const r = checkName(project)
  if (!r.ok) throw new CliError(`invalid project name "${project}": ${r.reason.en}. A project name is ${NAME_RULE}; pass --project NAME`)
  return r.path
}

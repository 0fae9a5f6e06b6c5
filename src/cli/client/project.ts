/**
 * A deploy's project name: the folder's name unless --project gives one, and the names the
 * server could not take. Its own module, without the deploy code: `svc deploys` and
 * `svc rollback` name the current folder's project too, and every command's start loads
 * what they import (the deploy code's content-type table is the largest part of the CLI).
 */
import path from 'node:path'
import { checkName, NAME_RULE } from '../../features/sites/paths.js'
import { CliError } from './errors.js'

/** Project name from the folder when --project is not given. */
export function defaultProject(dirReal: string): string {
  return path.basename(dirReal)
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

/**
 * A deploy's project name: the folder's name unless --project gives one, and the names the
 * server could not take. Its own module, without the deploy code: `svc deploys` and
 * `svc rollback` name the current folder's project too, and every command's start loads
 * what they import (the deploy code's content-type table is the largest part of the CLI).
 */
import path from 'node:path'
import { CliError } from './errors.js'

/** Project name from the folder when --project is not given. */
export function defaultProject(dirReal: string): string {
  return path.basename(dirReal)
}

/** Refuses a project name the server could not take as one name (checked before any request). */
export function checkProjectName(project: string): void {
  if (!project || project.startsWith('.') || /[/\\\u0000-\u001f]/.test(project))
    throw new CliError(`invalid project name "${project}": one name, without "/", "\\" or control characters, not starting with "."; pass --project NAME`)
}

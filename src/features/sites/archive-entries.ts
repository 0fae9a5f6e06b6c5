/**
 * The names and kinds of an archive's entries as a deploy takes them (a tar's or a zip's): an
 * entry name becomes a project path, or is refused with the error naming what is wrong.
 */
import { AppError } from '../../errors/app-error.js'
import { checkRelativePath } from './paths.js'

/** The kind of a tar entry that is refused, with its own error. */
export function refuseType(type: string, path: string): AppError | null {
  switch (type) {
    case 'file':
    case 'contiguous-file':
    case 'directory':
      return null
    case 'symlink':
      return new AppError('ARCHIVE_SYMLINK', { params: { path } })
    case 'link':
      return new AppError('ARCHIVE_HARDLINK', { params: { path } })
    case 'character-device':
    case 'block-device':
    case 'fifo':
      return new AppError('ARCHIVE_DEVICE', { params: { path, kind: type } })
    default:
      return new AppError('ARCHIVE_UNEXPECTED', {
        params: { path, detail: { zh: `不接受 ${type} 类型的条目`, en: `entries of type ${type} are not accepted` } },
      })
  }
}

/** An entry name without its leading "./" (what `tar -C dir .` puts before every name). */
export const undotted = (name: string): string => name.replace(/^(\.\/)+/, '')

/** The archive's own root as a folder entry: "./" or "." (what `tar -C dir .` writes first). */
export const ROOT_DIR = /^\.(\/+\.)*\/*$/

/** An entry name as a project path: refuses absolute paths and ".." with their own errors. */
export function entryPath(name: string): string {
  const shown = JSON.stringify(name)
  if (name.startsWith('/') || /^[a-zA-Z]:[\\/]/.test(name)) throw new AppError('ARCHIVE_ABSOLUTE', { params: { path: shown } })
  if (name.split(/[\\/]/).includes('..')) throw new AppError('ARCHIVE_TRAVERSAL', { params: { path: shown } })
  const trimmed = undotted(name).replace(/\/+$/, '')
  const r = checkRelativePath(trimmed)
  if (!r.ok) throw new AppError('ARCHIVE_BAD_PATH', { params: { path: shown, detail: r.reason } })
  return r.path
}

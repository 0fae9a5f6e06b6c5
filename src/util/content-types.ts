import mime from 'mime-types'

/**
 * Where a hosted file's type differs from mime-db's: what browsers need and what nginx's
 * mime.types and Netlify send (decision 145). `.cjs` is a script (mime-db says
 * `application/node`, which a browser refuses to run under nosniff); `.ico` is `image/x-icon`,
 * as nginx and Microsoft's own software name it.
 */
const BY_EXTENSION: Record<string, string> = {
  cjs: 'text/javascript; charset=utf-8',
  ico: 'image/x-icon',
}

/**
 * Content-Type from the extension (never from the client); charset only for valid UTF-8 text.
 * The one table of hosted files' types: the server stores it, `svc deploy` labels its parts with it.
 */
export function contentTypeFor(path: string, validUtf8: boolean): string {
  const name = path.slice(path.lastIndexOf('/') + 1)
  // a name without a dot has no extension (a file named `html` is no HTML), as nginx and
  // Netlify read it; mime-types would take the whole name for one
  const dot = name.lastIndexOf('.')
  const ext = dot === -1 ? '' : name.slice(dot + 1).toLowerCase()
  const ct = (Object.hasOwn(BY_EXTENSION, ext) ? BY_EXTENSION[ext] : undefined) ?? ((ext !== '' && mime.contentType(ext)) || 'application/octet-stream')
  return validUtf8 ? ct : ct.replace(/;\s*charset=[^;]+/i, '')
}

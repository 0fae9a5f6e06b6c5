/** svc data: hosted data files and their versions. */
import path from 'node:path'
import { ApiClient } from '../api.js'
import { parse } from '../args.js'
import { CLIENT_HELP } from '../help.js'
import { ApiError, CliError } from '../errors.js'
import { flagsOf, need, noMore, multipartBody, readLocal, textType, unknownSubcommand, type Ctx } from './context.js'

/**
 * svc data push: a new hosted data file, or a new version of the file with the same display
 * name (or --id). The hosted-data API accepts only a login session (spec), so this needs
 * `svc login --username`.
 */
export async function dataCommand(ctx: Ctx, args: string[]): Promise<number> {
  const [sub, ...rest] = args
  if (sub !== 'push') throw unknownSubcommand(sub, ['push'])
  const { values: v, positionals } = parse(rest, CLIENT_HELP.data.flags)
  const file = need(positionals[0], 'the file to push (<file>)')
  noMore(positionals, 1)
  const buf = readLocal(file)
  let content: string
  try {
    // ignoreBOM: a leading byte-order mark stays in the text, so the server stores the file byte for byte
    content = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(buf)
  } catch {
    throw new CliError(`${file} is not UTF-8 text; hosted data holds text and JSON files`)
  }
  const contentType = v.type ?? textType(file)
  // the server stores display names trimmed and in NFC: compare the same form, or a name in
  // NFD (macOS file names) never matches and every push creates another file
  const displayName = (v.name ?? path.basename(file)).trim().normalize('NFC')
  const api = ctx.api(flagsOf(v))
  let id = v.id
  if (id === undefined) {
    const list = await api.get('/api/hosted-data/files', { auth: 'session' })
    const files: any[] = Array.isArray(list.json?.files) ? list.json.files : []
    id = files.find((f) => f?.display_name === displayName)?.id
  }
  let r
  let created = false
  if (id === undefined) {
    r = await postJsonOrFile(api, '/api/hosted-data/files', { display_name: displayName, content, content_type: contentType }, file, buf, contentType)
    created = true
  } else {
    r = await postJsonOrFile(
      api,
      `/api/hosted-data/files/${encodeURIComponent(id)}/versions`,
      { content, set_default: v.default === true, ...(v.type !== undefined ? { content_type: v.type } : {}) },
      file,
      buf,
      contentType,
    )
  }
  const f = r.json?.file ?? {}
  if (ctx.json) ctx.emit(r.json)
  else {
    // the version this push created (a concurrent push may already be the file's latest);
    // an older server names none: its latest then
    const n = r.json?.version?.version ?? f.latest_version
    const version = n !== undefined ? `version ${n}` : 'new version'
    ctx.out(
      `${created ? 'created' : `pushed ${version} of`} ${f.display_name ?? displayName} (id ${f.id ?? id})${!created && !v.default ? '; the default version is unchanged (--default makes it the default)' : ''}`,
    )
    if (f.public_url) ctx.out(`public link (default version ${f.default_version ?? 1}): ${f.public_url}`)
  }
  return 0
}

/** JSON body; a body over the server's JSON limit (413) is sent again as a multipart file. */
async function postJsonOrFile(api: ApiClient, p: string, json: Record<string, unknown>, file: string, data: Buffer, type: string) {
  try {
    return await api.post(p, { json, auth: 'session' })
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 413) throw e
    const fields: Record<string, string> = {}
    for (const [k, val] of Object.entries(json)) if (k !== 'content') fields[k] = String(val)
    const { body, contentType } = multipartBody(fields, [{ name: 'file', filename: path.basename(file), type, data }])
    return api.post(p, { body, contentType, auth: 'session' })
  }
}

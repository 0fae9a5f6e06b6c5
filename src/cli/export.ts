import fs from 'node:fs'
import path from 'node:path'
import { blobFolder, type Config } from '../config.js'
import type { Db } from '../db/kysely.js'
import { serviceLabels } from '../http/site-origin.js'
import { openBlobStore } from '../storage/open.js'
import { ExportError, importArchive, writeExport, type ArchiveFormat } from '../features/export/archive.js'
import { ioFailure, isSystemError } from '../util/io-failure.js'
import { ownedByDataDir } from '../util/private-files.js'

/** The container FILE's name asks for: .zip is a zip; anything else (.tar.gz, .tgz) a tar.gz, as before zip existed. */
export const formatOfName = (file: string): ArchiveFormat => (/\.zip$/i.test(file) ? 'zip' : 'tar.gz')

/**
 * `svc export USER FILE` and `svc import FILE [--as NAME]` (docs/operations/export.md). The
 * export is written to FILE.partial and renamed, so FILE is either absent or complete.
 */
export async function exportToFile(db: Db, config: Config, username: string, file: string): Promise<string> {
  // the archive renamed over the live svc.db (or into the blob store) would replace what the server runs on
  if (ownedByDataDir(file, config.dataDir, blobFolder(config.dataDir, config.storageUrl))) {
    throw new ExportError(`${file} is the data folder's own (its database, certificate, lock or blobs): write the archive elsewhere; nothing was written`)
  }
  const blobs = await openBlobStore(config)
  const tmp = `${file}.partial`
  const out = fs.createWriteStream(tmp, { mode: 0o600 })
  try {
    await writeExport(db, blobs, username, out, formatOfName(file))
    fs.renameSync(tmp, file)
  } catch (e) {
    // the stream opens its file asynchronously: closed first, so the removal cannot run before the open
    out.destroy()
    await new Promise<void>((resolve) => (out.closed ? resolve() : out.once('close', () => resolve())))
    fs.rmSync(tmp, { force: true })
    // a file or disk failure named with the archive it was for, not the bare errno
    throw isSystemError(e) ? new ExportError(`export to ${file} failed: ${ioFailure(e)}; nothing was written`) : e
  } finally {
    await blobs.close()
  }
  return `exported ${username} to ${path.resolve(file)} (${fs.statSync(file).size} bytes)`
}

export async function importFromFile(db: Db, config: Config, file: string, as: string | undefined): Promise<{ username: string; text: string }> {
  if (!fs.existsSync(file))
    throw new ExportError(`${file} does not exist: svc import takes the .zip or .tar.gz file that svc export wrote; nothing was imported`)
  const blobs = await openBlobStore(config)
  try {
    const r = await importArchive(db, blobs, file, as, serviceLabels(config))
    const counts = Object.entries(r.counts)
      .map(([k, v]) => `${v} ${k}`)
      .join(', ')
    const text = [
      `imported ${r.username}: ${counts || 'no content'}`,
      ...r.renamed.map((x) => `  taken on this instance, renamed: ${x}`),
      ...r.overQuota.map(
        (q) =>
          `warning: its folder projects hold ${q.used} bytes, over its ${q.quota} limit of ${q.limit}: it keeps them and can redeploy, roll back and delete, but a deploy of new bytes is refused (1208) until you raise it: svc user set ${r.username} --limit ${q.quota}=N`,
      ),
      `password: ${r.password}   (change it with: svc user set ${r.username} --password ...)`,
      await tellServers(config, r.username),
    ].join('\n')
    return { username: r.username, text }
  } finally {
    await blobs.close()
  }
}

/**
 * After an import, running servers drop what their public host cached about the new user's
 * name (a 404 of a page asked for before, kept up to 5 minutes): through the Redis bus when
 * REDIS_URL is set, as a deploy through the API does. (KV reads and image and data links are
 * cached for seconds only.) Without Redis no other process can be reached: the line returned
 * says what to do.
 */
async function tellServers(config: Config, username: string): Promise<string> {
  if (config.redisUrl === null)
    return "a running server may answer 404 for this user's pages for up to 5 minutes: restart it to serve them at once (or set REDIS_URL)"
  const [{ createRedisBus }, { invalidateHosting }] = await Promise.all([import('../infra/bus.js'), import('../features/sites/invalidate.js')])
  const bus = createRedisBus(config.redisUrl, `${config.redisPrefix}bus:`)
  try {
    await invalidateHosting(bus, username)
    return 'running servers were told (REDIS_URL): they serve it now'
  } catch (e) {
    return `could not tell the running servers (${(e as Error).message}): they serve it within 5 minutes, or restart them`
  } finally {
    await bus.close()
  }
}

import fs from 'node:fs'
import path from 'node:path'
import type { Config } from '../config.js'
import type { Db } from '../db/kysely.js'
import { openBlobStore } from '../storage/open.js'
import { importArchive, writeExport, type ArchiveFormat } from '../features/export/archive.js'

/** The container FILE's name asks for: .zip is a zip; anything else (.tar.gz, .tgz) a tar.gz, as before zip existed. */
export const formatOfName = (file: string): ArchiveFormat => (/\.zip$/i.test(file) ? 'zip' : 'tar.gz')

/**
 * `svc export USER FILE` and `svc import FILE [--as NAME]` (docs/operations/export.md). The
 * export is written to FILE.partial and renamed, so FILE is either absent or complete.
 */
export async function exportToFile(db: Db, config: Config, username: string, file: string): Promise<string> {
  const blobs = await openBlobStore(config)
  const tmp = `${file}.partial`
  try {
    await writeExport(db, blobs, username, fs.createWriteStream(tmp, { mode: 0o600 }), formatOfName(file))
    fs.renameSync(tmp, file)
  } catch (e) {
    fs.rmSync(tmp, { force: true })
    throw e
  } finally {
    await blobs.close()
  }
  return `exported ${username} to ${path.resolve(file)} (${fs.statSync(file).size} bytes)`
}

export async function importFromFile(db: Db, config: Config, file: string, as: string | undefined): Promise<string> {
  const blobs = await openBlobStore(config)
  try {
    const r = await importArchive(db, blobs, file, as)
    const counts = Object.entries(r.counts)
      .map(([k, v]) => `${v} ${k}`)
      .join(', ')
    return [
      `imported ${r.username}: ${counts || 'no content'}`,
      ...r.renamed.map((x) => `  taken on this instance, renamed: ${x}`),
      `password: ${r.password}   (change it with: svc user set ${r.username} --password ...)`,
    ].join('\n')
  } finally {
    await blobs.close()
  }
}

import fs from 'node:fs'
import fsp from 'node:fs/promises'
import path from 'node:path'

/** A backup snapshot's name: its UTC start time (toISOString), with ':' and '.' replaced by '-'. */
export const SNAPSHOT_RE = /^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/

/** The start time a snapshot's name stands for, as an ISO string. */
export function snapshotStartedAt(name: string): string {
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2})-(\d{3})Z$/.exec(name)
  if (!m) throw new Error(`not a snapshot name: ${name}`)
  return `${m[1]}T${m[2]}:${m[3]}:${m[4]}.${m[5]}Z`
}

/**
 * The complete snapshots of backup folder `dir` (those whose manifest.json, written last, is
 * there), oldest first (their names sort by time); none when the folder is missing.
 */
export async function folderSnapshots(dir: string): Promise<string[]> {
  const names = await fsp.readdir(dir).catch(() => [] as string[])
  return names.filter((n) => SNAPSHOT_RE.test(n) && fs.existsSync(path.join(dir, n, 'manifest.json'))).sort()
}

import crypto from 'node:crypto'
import { gzipSync } from 'node:zlib'
import tar from 'tar-stream'
import type { Res, TestServer } from './server.js'

/** Helpers for archive deploys: manifests, tar streams (good and bad), the two requests. */

export const sha = (b: string | Buffer): string => crypto.createHash('sha256').update(b).digest('hex')

export interface TarEntry {
  name: string
  data?: string | Buffer
  type?: 'file' | 'directory' | 'symlink' | 'link' | 'character-device' | 'block-device' | 'fifo'
  linkname?: string
}

/** A tar of these entries, built with tar-stream's packer (as a client would). */
export async function tarOf(entries: TarEntry[], gzip = false): Promise<Buffer> {
  const pack = tar.pack()
  const chunks: Buffer[] = []
  pack.on('data', (c) => chunks.push(c as Buffer))
  const done = new Promise<void>((resolve, reject) => {
    pack.on('end', resolve)
    pack.on('error', reject)
  })
  for (const e of entries) {
    const data = e.data === undefined ? undefined : Buffer.from(e.data)
    await new Promise<void>((resolve, reject) => {
      const header = { name: e.name, type: e.type ?? 'file', linkname: e.linkname, size: data?.length ?? 0, mode: e.type === 'directory' ? 0o755 : 0o644 }
      if (data) pack.entry(header, data, (err) => (err ? reject(err) : resolve()))
      else pack.entry(header, (err) => (err ? reject(err) : resolve()))
    })
  }
  pack.finalize()
  await done
  const out = Buffer.concat(chunks)
  return gzip ? gzipSync(out) : out
}

export type Site = Record<string, string | Buffer>

/** The manifest entry of a site: every path with its SHA-256. */
export function manifestOf(files: Site, extra: Record<string, unknown> = {}): TarEntry {
  return { name: 'svc-deploy.json', data: JSON.stringify({ files: Object.fromEntries(Object.entries(files).map(([p, d]) => [p, sha(d)])), ...extra }) }
}

/** POSTs a tar body to a project's deploys (`signal` gives up on an answer that does not come). */
export function postArchive(s: TestServer, key: string, project: string, body: Buffer, gzip = false, signal?: AbortSignal): Promise<Res> {
  return s.post(`/api/folders/${project}/deploys`, {
    key,
    body,
    headers: { 'content-type': gzip ? 'application/gzip' : 'application/x-tar', 'accept-language': 'en' },
    signal,
  })
}

/** A whole archive deploy: asks which digests are missing, then sends only those files. */
export async function deploySite(
  s: TestServer,
  key: string,
  project: string,
  files: Site,
  opts: { preview?: boolean; message?: string; gzip?: boolean } = {},
): Promise<{ check: Res; res: Res }> {
  const manifest = manifestOf(files, { ...(opts.preview ? { preview: true } : {}), ...(opts.message ? { message: opts.message } : {}) })
  const check = await s.post(`/api/folders/${project}/deploys/missing`, { key, json: JSON.parse(String(manifest.data)) })
  const missing = new Set<string>(check.json?.missing ?? [])
  const sent = new Set<string>()
  const entries: TarEntry[] = [manifest]
  for (const [p, d] of Object.entries(files)) {
    const h = sha(d)
    if (missing.has(h) && !sent.has(h)) {
      sent.add(h)
      entries.push({ name: p, data: d })
    }
  }
  const res = await postArchive(s, key, project, await tarOf(entries, opts.gzip), opts.gzip)
  return { check, res }
}

import { multipart, type Res, type TestServer } from './server.js'

/** Helpers shared by the single-file, folder and public-host suites. */

export const HTML = (title: string, extra = '') => `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1>${extra}</body></html>`

/** Uploads one single file with hand-built multipart (fields first, then the file part). */
export function uploadFile(
  s: TestServer,
  auth: { key?: string; cookie?: string },
  filename: string,
  data: string | Buffer,
  fields: Record<string, string> = {},
  headers: Record<string, string> = {},
): Promise<Res> {
  const mp = multipart([...Object.entries(fields).map(([name, v]) => ({ name, data: v })), { name: 'file', filename, type: 'text/html', data }])
  return s.post('/svc_api/upload', { ...auth, body: mp.body, headers: { 'content-type': mp.contentType, ...headers } })
}

export interface BatchFile {
  filename?: string
  filenameStar?: string
  data: string | Buffer
  field?: string
}

/** Batch-uploads files to a folder project; file names keep their directories. */
export function batchUpload(
  s: TestServer,
  auth: { key?: string; cookie?: string },
  folderPath: string,
  files: BatchFile[],
  overwrite?: boolean | string,
  headers: Record<string, string> = {},
): Promise<Res> {
  const parts: Parameters<typeof multipart>[0] = []
  if (overwrite !== undefined) parts.push({ name: 'overwrite_files', data: String(overwrite) })
  for (const f of files)
    parts.push({ name: f.field ?? 'files[]', filename: f.filename, filenameStar: f.filenameStar, type: 'application/octet-stream', data: f.data })
  const mp = multipart(parts)
  return s.post(`/api/folders/${folderPath}/batch_upload`, { ...auth, body: mp.body, headers: { ...headers, 'content-type': mp.contentType } })
}

/** Raises the test server's rate limits so concurrency tests measure quotas, not limits. */
export const HIGH_LIMITS = JSON.stringify({
  default: { minute: 100000, hour: 100000, day: 1000000, concurrent: 1000 },
  authenticated: { minute: 100000, hour: 100000, day: 1000000, concurrent: 1000 },
  vip: { minute: 100000, hour: 100000, day: 1000000, concurrent: 1000 },
})

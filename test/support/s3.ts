import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import crypto from 'node:crypto'
import S3rver from 's3rver'

/** s3rver's built-in account. */
export const S3_ACCESS_KEY = 'S3RVER'
export const S3_SECRET_KEY = 'S3RVER'
export const S3_BUCKET = 'svc-test'

export interface TestS3 {
  endpoint: string
  /** A STORAGE_URL for a fresh key prefix in the test bucket (credentials in the query), optionally through another endpoint (a relay). */
  storageUrl(prefix?: string, via?: string): string
  close(): Promise<void>
}

/**
 * Starts s3rver (an S3-compatible server in Node, files in a temp dir) on a loopback port
 * chosen by the OS, with one bucket. Each caller of storageUrl() gets its own key prefix.
 */
export async function startS3(): Promise<TestS3> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-s3-'))
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: dir, configureBuckets: [{ name: S3_BUCKET }] })
  const info = await server.run()
  const endpoint = `http://127.0.0.1:${info.port}`
  return {
    endpoint,
    storageUrl(prefix = `p${crypto.randomBytes(4).toString('hex')}`, via = endpoint) {
      const q = new URLSearchParams({ endpoint: via, region: 'us-east-1', forcePathStyle: 'true', accessKeyId: S3_ACCESS_KEY, secretAccessKey: S3_SECRET_KEY })
      return `s3://${S3_BUCKET}/${prefix}?${q}`
    },
    async close() {
      await server.close()
      fs.rmSync(dir, { recursive: true, force: true })
    },
  }
}

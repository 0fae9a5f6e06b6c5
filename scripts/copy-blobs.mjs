// Copies every blob of svc's blob store (STORAGE_URL: an S3 bucket, or DATA_DIR/blobs) into
// DIR/ab/cd/<sha256>, verifying each against its name; blobs already in DIR are skipped, so
// the copy is incremental (blobs are immutable). Used by scripts/backup-postgres.sh; needs
// `npm run build` (it loads dist/). Prints "copied N, skipped M".
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { pipeline } from 'node:stream/promises'
import { Transform } from 'node:stream'

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..')
const { loadConfig } = await import(path.join(root, 'dist/src/config.js'))
const { openBlobStore } = await import(path.join(root, 'dist/src/storage/open.js'))

const dest = process.argv[2]
if (!dest) {
  process.stderr.write('usage: node scripts/copy-blobs.mjs DIR\n')
  process.exit(2)
}
const blobs = await openBlobStore(loadConfig(process.env))
let copied = 0
let skipped = 0
try {
  for await (const { digest } of blobs.list()) {
    const target = path.join(dest, digest.slice(0, 2), digest.slice(2, 4), digest)
    if (fs.existsSync(target)) {
      skipped++
      continue
    }
    fs.mkdirSync(path.dirname(target), { recursive: true })
    const tmp = `${target}.${process.pid}.tmp`
    const hash = crypto.createHash('sha256')
    const tap = new Transform({
      transform(chunk, _enc, cb) {
        hash.update(chunk)
        cb(null, chunk)
      },
    })
    try {
      await pipeline(await blobs.get(digest), tap, fs.createWriteStream(tmp))
      if (hash.digest('hex') !== digest) throw new Error(`blob ${digest}: content does not match its name`)
      fs.renameSync(tmp, target)
    } catch (e) {
      fs.rmSync(tmp, { force: true })
      throw e
    }
    copied++
  }
} finally {
  await blobs.close()
}
process.stdout.write(`copied ${copied}, skipped ${skipped}\n`)

// Copies every blob of svc's blob store (STORAGE_URL: an S3 bucket, or DATA_DIR/blobs) into
// DIR/ab/cd/<sha256>, verifying each against its name; blobs already in DIR are skipped, so
// the copy is incremental (blobs are immutable). Used by scripts/backup-postgres.sh; needs
// `npm run build` (it loads dist/). Prints "copied N, skipped M".
//
// With --restore, the other way: every blob of DIR (that layout) goes into the store, each
// hashed first and refused when its bytes do not match its name (exit 1, naming it); blobs
// the store holds are skipped. Prints "restored N, skipped M".
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { pipeline } from 'node:stream/promises'
import { Transform } from 'node:stream'

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..')
const { loadConfig } = await import(path.join(root, 'dist/src/config.js'))
const { openBlobStore } = await import(path.join(root, 'dist/src/storage/open.js'))

const restore = process.argv[2] === '--restore'
const dest = process.argv[restore ? 3 : 2]
if (!dest || process.argv.length > (restore ? 4 : 3)) {
  process.stderr.write('usage: node scripts/copy-blobs.mjs DIR\n       node scripts/copy-blobs.mjs --restore DIR\n')
  process.exit(2)
}
const blobs = await openBlobStore(loadConfig(process.env))
let copied = 0
let skipped = 0
const DIGEST = /^[0-9a-f]{64}$/
try {
  if (restore) {
    for (const a of fs.readdirSync(dest).sort()) {
      if (!/^[0-9a-f]{2}$/.test(a)) continue
      for (const b of fs.readdirSync(path.join(dest, a)).sort()) {
        for (const digest of fs.readdirSync(path.join(dest, a, b)).sort()) {
          if (!DIGEST.test(digest)) continue
          if (await blobs.exists(digest)) {
            skipped++
            continue
          }
          const file = path.join(dest, a, b, digest)
          const hash = crypto.createHash('sha256')
          for await (const chunk of fs.createReadStream(file)) hash.update(chunk)
          if (hash.digest('hex') !== digest) throw new Error(`blob ${digest} (${file}): content does not match its name`)
          await blobs.put(fs.createReadStream(file))
          copied++
        }
      }
    }
  } else {
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
  }
} catch (e) {
  process.stderr.write(`error: ${e.message}\n`)
  process.exitCode = 1
} finally {
  await blobs.close()
}
if (!process.exitCode) process.stdout.write(restore ? `restored ${copied}, skipped ${skipped}\n` : `copied ${copied}, skipped ${skipped}\n`)

#!/usr/bin/env node
// The cost of the site_bytes quota's reads (decision 241) on an account with a big history:
// one project of FILES files and KEEP kept deploys, each deploy changing CHANGE of its files
// (so the account holds FILES + KEEP * CHANGE distinct blobs in FILES * (KEEP + 1) rows).
// Prints ms per `siteBytes` (the full scan) and per `checkSiteBytes` of one new blob and of
// 1,000, each inside a transaction under the user's lock, as the writes run them.
//
//   npm run build
//   node bench/site-bytes.mjs                          # SQLite, 20,000 files, 10 kept deploys
//   FILES=2000 KEEP=10 node bench/site-bytes.mjs
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test?schema=bench_site_bytes node bench/site-bytes.mjs
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const { loadConfig } = await import(path.join(root, 'dist/src/config.js'))
const { createDeps } = await import(path.join(root, 'dist/src/compose.js'))
const { siteBytes, checkSiteBytes } = await import(path.join(root, 'dist/src/features/sites/site-usage.js'))

const FILES = Number(process.env.FILES ?? 20_000)
const KEEP = Number(process.env.KEEP ?? 10)
const CHANGE = Number(process.env.CHANGE ?? 100)
const REPEAT = Number(process.env.REPEAT ?? 5)

const work = fs.mkdtempSync('/tmp/svc-bench-site-bytes-')
const deps = await createDeps(loadConfig({ ...process.env, DATA_DIR: work, LOG_LEVEL: 'warn', MIGRATE_ON_START: '1' }))
const k = deps.db.k
const hex = (s) => crypto.createHash('sha256').update(s).digest('hex')
try {
  const user = await deps.users.create(`bench${Date.now()}`, 'a long password')
  const folderId = crypto.randomUUID()
  const now = Date.now()
  const files = Array.from({ length: FILES }, (_, i) => ({ path: `p/${i}.html`, digest: hex(`v0:${i}`), size: 2048 }))
  await k.transaction().execute(async (trx) => {
    await trx
      .insertInto('folders')
      .values({ id: folderId, user_id: user.id, name: 'big', is_published: 1, created_at: now, updated_at: now, published_at: now })
      .execute()
    for (let i = 0; i < files.length; i += 500)
      await trx
        .insertInto('folder_files')
        .values(files.slice(i, i + 500).map((f) => ({ folder_id: folderId, ...f, content_type: 'text/html', created_at: now, updated_at: now })))
        .execute()
    for (let d = 1; d <= KEEP; d++) {
      const id = crypto.randomUUID()
      await trx
        .insertInto('deploys')
        .values({
          id,
          folder_id: folderId,
          seq: d,
          created_at: now,
          file_count: FILES,
          bytes: FILES * 2048,
          message: '',
          source: 'cli',
          is_preview: 0,
          site_rules: null,
        })
        .execute()
      const rows = files.map((f, i) => (i < CHANGE ? { ...f, digest: hex(`v${d}:${i}`) } : f))
      for (let i = 0; i < rows.length; i += 500)
        await trx
          .insertInto('deploy_files')
          .values(rows.slice(i, i + 500).map((f) => ({ deploy_id: id, ...f, content_type: 'text/html', updated_at: now })))
          .execute()
    }
  })
  const time = async (label, fn) => {
    const ms = []
    for (let i = 0; i < REPEAT; i++) {
      const t0 = performance.now()
      await k.transaction().execute(async (trx) => {
        await deps.db.lockUser(trx, user.id)
        await fn(trx)
      })
      ms.push(performance.now() - t0)
    }
    ms.sort((a, b) => a - b)
    console.log(`${label}: median ${ms[Math.floor(ms.length / 2)].toFixed(1)} ms (min ${ms[0].toFixed(1)}, max ${ms[ms.length - 1].toFixed(1)})`)
  }
  console.log(`${deps.config.databaseUrl ? 'postgres' : 'sqlite'}: ${FILES} files, ${KEEP} kept deploys, ${FILES * (KEEP + 1)} rows`)
  await time('siteBytes (the whole scan)', async (trx) => console.assert((await siteBytes(trx, user.id)) === (FILES + KEEP * CHANGE) * 2048))
  // the default limit (1 GiB) is above the bound here: the bound settles it
  const far = { id: user.id, limits: {} }
  await time('checkSiteBytes far from the limit, 1 new blob', (trx) => checkSiteBytes(trx, far, new Map([[hex('new'), 2048]])))
  await time('checkSiteBytes far from the limit, 1,000 new blobs', (trx) =>
    checkSiteBytes(trx, far, new Map(Array.from({ length: 1000 }, (_, i) => [hex(`new${i}`), 2048]))),
  )
  // a limit just above what the account holds: the bound does not settle it, the scans run
  const near = { id: user.id, limits: { site_bytes: (FILES + KEEP * CHANGE) * 2048 + 4 * 1024 * 1024 } }
  await time('checkSiteBytes near the limit, 1 new blob', (trx) => checkSiteBytes(trx, near, new Map([[hex('new'), 2048]])))
  await time('checkSiteBytes near the limit, 1,000 new blobs', (trx) =>
    checkSiteBytes(trx, near, new Map(Array.from({ length: 1000 }, (_, i) => [hex(`new${i}`), 2048]))),
  )
  await time('checkSiteBytes near the limit, 1,000 held blobs', (trx) =>
    checkSiteBytes(trx, near, new Map(files.slice(0, 1000).map((f) => [f.digest, f.size]))),
  )
} finally {
  await deps.close()
  fs.rmSync(work, { recursive: true, force: true })
}

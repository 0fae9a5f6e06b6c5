// Prints the service's OpenAPI document (what GET /openapi.json answers) to stdout or to the
// file named by the first argument. The app is built in-process on a throw-away SQLite data
// dir and never listens, so this needs no server, database or network.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { loadConfig } from '../src/config.js'
import { createDeps } from '../src/compose.js'
import { buildApp } from '../src/app.js'

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-openapi-'))
try {
  const deps = await createDeps(loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent' }))
  const app = await buildApp(deps)
  try {
    const r = await app.inject({ method: 'GET', url: '/openapi.json' })
    if (r.statusCode !== 200) throw new Error(`GET /openapi.json answered ${r.statusCode}`)
    const text = `${JSON.stringify(r.json(), null, 2)}\n`
    if (process.argv[2]) {
      fs.mkdirSync(path.dirname(path.resolve(process.argv[2])), { recursive: true })
      fs.writeFileSync(process.argv[2], text)
    } else process.stdout.write(text)
  } finally {
    await app.close()
    await deps.close()
  }
} finally {
  fs.rmSync(dataDir, { recursive: true, force: true })
}

// The service as `svc serve` builds it, for the bench servers (bench/hosting-server.mjs,
// bench/tls-handler-server.mjs): configuration from the environment, HTTPS on PORT (its
// self-signed certificate), HTTP_PORT redirecting. Needs a built dist/.
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
/** A module of the built service, by its path under dist/src. */
export const dist = (file) => import(path.join(root, 'dist/src', file))

/** Builds and starts the service; `stop()` closes it and exits the process. */
export async function startService() {
  const { loadConfig } = await dist('config.js')
  const { createDeps } = await dist('compose.js')
  const { buildApp } = await dist('app.js')
  const { listen, serverFactoryFor, tlsMaterial, SERVER_TIMEOUTS, applyHeapGrowth } = await dist('server.js')
  // V8's heap growth as svc serve sets it, unless NODE_ARGS gave its own
  applyHeapGrowth()
  const config = loadConfig(process.env)
  const deps = await createDeps(config)
  const tls = await tlsMaterial(config)
  const app = await buildApp(deps, { serverFactory: serverFactoryFor(tls) })
  const listening = await listen(app, config, tls !== null)
  // the main server's request listener: the app's fast paths, then its router
  const handler = app.server.listeners('request')[0]
  const stop = async (others = []) => {
    for (const s of others) {
      s.closeAllConnections()
      s.close()
    }
    await listening.close().catch(() => {})
    await deps.close().catch(() => {})
    process.exit(0)
  }
  return { app, deps, tls, listening, handler, stop, SERVER_TIMEOUTS }
}

import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { UsageError } from './errors.js'

/** What `svc login` stores (one server per config file). */
export interface StoredConfig {
  url?: string
  key?: string
  insecure?: boolean
  /** `session=...` cookie from `svc login --username` (hosted data needs a session). */
  session?: string
  username?: string
}

/** The connection a client command uses, and where each part came from. */
export interface Connection {
  url: string
  key?: string
  session?: string
  /** No key for this server, but the config file holds one for this other server. */
  keyServer?: string
  insecure: boolean
  source: { url: 'flag' | 'env' | 'config'; key?: 'flag' | 'env' | 'config' }
}

/** Path of the config file: SVC_CONFIG, else $XDG_CONFIG_HOME/svc/config.json, else ~/.config/svc/config.json. */
export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.SVC_CONFIG) return path.resolve(env.SVC_CONFIG)
  const base = env.XDG_CONFIG_HOME && path.isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : path.join(os.homedir(), '.config')
  return path.join(base, 'svc', 'config.json')
}

/**
 * Reads the config file; a missing file is an empty config. Warns when others can read it.
 * `orEmpty`: an unreadable file (not JSON) is an empty config, with a warning, for the
 * commands that replace or remove it (login, logout), which must be the way out of it.
 */
export function readConfig(file = configPath(), o: { orEmpty?: boolean } = {}): StoredConfig {
  let text: string
  try {
    text = fs.readFileSync(file, 'utf8')
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return {}
    throw new UsageError(`cannot read ${file}: ${(e as Error).message}`)
  }
  if (process.platform !== 'win32') {
    const mode = fs.statSync(file).mode & 0o777
    if (mode & 0o077) process.stderr.write(`warning: ${file} is readable by other users (mode ${mode.toString(8)}); run: chmod 600 ${file}\n`)
  }
  try {
    const v = JSON.parse(text) as unknown
    if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error('not an object')
    return v
  } catch (e) {
    if (o.orEmpty) {
      process.stderr.write(`warning: ${file} is not a config file (${(e as Error).message}); it is replaced\n`)
      return {}
    }
    throw new UsageError(`cannot read ${file}: ${(e as Error).message}; fix it or run svc login again`)
  }
}

/**
 * Writes the config file with mode 0600 (directory 0700): a temporary file created with that
 * mode, fsynced, then renamed over the old one, so the key is never readable by others and a
 * crash leaves the old or the new file, never half of one.
 */
export function writeConfig(cfg: StoredConfig, file = configPath()): void {
  const dir = path.dirname(file)
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
  const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.${Date.now()}.tmp`)
  const fd = fs.openSync(tmp, 'wx', 0o600)
  try {
    fs.writeFileSync(fd, `${JSON.stringify(cfg, null, 2)}\n`)
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
  fs.chmodSync(tmp, 0o600)
  fs.renameSync(tmp, file)
}

/** Removes the config file (svc logout). */
export function removeConfig(file = configPath()): boolean {
  try {
    fs.unlinkSync(file)
    return true
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false
    throw e
  }
}

const truthy = (v: string | undefined) => v !== undefined && /^(1|true|yes|on)$/i.test(v.trim())

/**
 * Checks and normalises a server URL to its origin (plus a path prefix, if any). Plain HTTP is
 * refused except on loopback, since the API key would travel in clear.
 */
export function normaliseUrl(raw: string): string {
  let u: URL
  try {
    u = new URL(raw.includes('://') ? raw : `https://${raw}`)
  } catch {
    throw new UsageError(`invalid server URL "${raw}"`)
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new UsageError(`invalid server URL "${raw}": use https://`)
  if (u.username || u.password) throw new UsageError('put no credentials in the server URL; use --key')
  if (u.search || u.hash) throw new UsageError(`invalid server URL "${raw}": no query or fragment`)
  const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(u.hostname) || /^127\./.test(u.hostname)
  if (u.protocol === 'http:' && !loopback) throw new UsageError(`refusing plain http:// for ${u.host}: the API key would be sent in clear; use https://`)
  return `${u.origin}${u.pathname.replace(/\/+$/, '')}`
}

export interface ConnectionFlags {
  url?: string
  key?: string
  insecure?: boolean
}

/**
 * The connection of a command: flags, then the environment (SVC_URL, SVC_API_KEY,
 * SVC_INSECURE), then the config file. The environment wins over the file so CI can run
 * without `svc login`.
 */
export function resolveConnection(
  flags: ConnectionFlags,
  env: NodeJS.ProcessEnv = process.env,
  stored: StoredConfig = readConfig(configPath(env)),
): Connection {
  const pick = <T>(f: T | undefined, e: T | undefined, c: T | undefined): [T | undefined, 'flag' | 'env' | 'config' | undefined] =>
    f !== undefined && f !== '' ? [f, 'flag'] : e !== undefined && e !== '' ? [e, 'env'] : c !== undefined && c !== '' ? [c, 'config'] : [undefined, undefined]
  const [url, urlSource] = pick(flags.url, env.SVC_URL, stored.url)
  if (!url) throw new UsageError('no server configured: run `svc login --url https://host --key KEY`, or set SVC_URL and SVC_API_KEY')
  // the stored key, session and --insecure belong to the stored server only: a --url or
  // SVC_URL naming another server gets none of them (it must not receive that key)
  const sameServer = urlSource === 'config' || (stored.url !== undefined && normaliseUrl(stored.url) === normaliseUrl(url))
  const [key, keySource] = pick(flags.key, env.SVC_API_KEY, sameServer ? stored.key : undefined)
  return {
    url: normaliseUrl(url),
    key,
    keyServer: !key && !sameServer && stored.key && stored.url ? normaliseUrl(stored.url) : undefined,
    session: sameServer ? stored.session : undefined,
    insecure: flags.insecure === true || truthy(env.SVC_INSECURE) || (sameServer && stored.insecure === true),
    source: { url: urlSource!, key: keySource },
  }
}

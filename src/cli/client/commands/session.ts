/** svc login, svc logout and svc whoami. */
import { ApiClient } from '../api.js'
import { parse } from '../args.js'
import { CLIENT_HELP } from '../help.js'
import { configPath, normaliseUrl, readConfig, removeConfig, writeConfig } from '../config.js'
import { CliError, UsageError } from '../errors.js'
import { readSecret } from '../prompt.js'
import { flagsOf, keyHint, need, noMore, readStdin, type Ctx } from './context.js'

/**
 * svc login: stores the server URL and an API key (checked with /svc_api/me), and with
 * --username a login session for the session-only endpoints (hosted data). The file is 0600.
 */
export async function loginCommand(ctx: Ctx, args: string[]): Promise<number> {
  const { values: v, positionals } = parse(args, CLIENT_HELP.login.flags)
  noMore(positionals, 0)
  const file = configPath()
  const stored = readConfig(file, { orEmpty: true })
  const url = normaliseUrl(need(v.url ?? process.env.SVC_URL ?? stored.url, '--url (the server, e.g. https://host)'))
  const sameServer = stored.url !== undefined && normaliseUrl(stored.url) === url
  // the file keeps certificate checks off only when asked with --insecure (or already so for
  // this server): SVC_INSECURE in the environment applies to this login, not to later commands
  const keepInsecure = v.insecure === true || (sameServer && stored.insecure === true)
  const insecure = keepInsecure || /^(1|true|yes|on)$/i.test(process.env.SVC_INSECURE ?? '')
  const next = sameServer ? { ...stored } : {}
  next.url = url
  next.insecure = keepInsecure || undefined

  if (v.username !== undefined) {
    const username = need(v.username, '--username')
    let password = v.password
    if (password !== undefined)
      ctx.rep.note('warning: --password is visible to other users of this machine in the process list; prefer --password-stdin or SVC_PASSWORD')
    if (password === undefined && v['password-stdin']) password = (await readStdin()).replace(/\r?\n$/, '')
    password ??= process.env.SVC_PASSWORD
    password ??= await readSecret(`password for ${username}: `)
    if (!password) throw new UsageError('no password: use --password-stdin, SVC_PASSWORD, or run in a terminal to be asked')
    const api = new ApiClient({ url, insecure, source: { url: 'flag' } }, { notify: (m) => ctx.rep.note(m) })
    try {
      const r = await api.post('/login', {
        auth: 'none',
        body: new URLSearchParams({ username, password }).toString(),
        contentType: 'application/x-www-form-urlencoded',
        // a second session is harmless; the first is simply never used
        idempotent: true,
      })
      const setCookie = r.headers['set-cookie']
      const first = (Array.isArray(setCookie) ? setCookie : [setCookie ?? '']).map((c) => c.split(';')[0]).find((c) => c.startsWith('session='))
      if (!first) throw new CliError('the server answered the login without a session cookie')
      next.session = first
      next.username = typeof r.json?.data?.username === 'string' ? r.json.data.username : username
    } finally {
      await api.close()
    }
  }

  let key = v.key
  if (key === undefined && v['key-stdin']) key = (await readStdin()).trim()
  if (key === undefined && v.username === undefined) key = process.env.SVC_API_KEY || (await readSecret('API key: '))
  let who: string | undefined
  if (key) {
    const api = new ApiClient({ url, key, insecure, source: { url: 'flag', key: 'flag' } }, { notify: (m) => ctx.rep.note(m) })
    try {
      const r = await api.get('/svc_api/me')
      who = r.json?.data?.username
    } finally {
      await api.close()
    }
    next.key = key
  }
  if (!next.key && !next.session) throw new UsageError('give --key KEY (or --key-stdin), or --username NAME', true)
  writeConfig(next, file)
  const what: string[] = []
  if (next.key) what.push(`API key${who ? ` of ${who}` : ''}`)
  if (v.username !== undefined) what.push(`session of ${next.username}`)
  if (ctx.json)
    ctx.emit({
      success: true,
      url,
      username: who ?? next.username ?? null,
      key: next.key ? keyHint(next.key) : null,
      session: Boolean(next.session),
      config: file,
    })
  else ctx.out(`logged in to ${url} (${what.join(' and ')}); saved in ${file}`)
  return 0
}

/** svc logout: ends the stored session on the server and removes the config file. */
export async function logoutCommand(ctx: Ctx, args: string[]): Promise<number> {
  const { positionals } = parse(args, CLIENT_HELP.logout.flags)
  noMore(positionals, 0)
  const file = configPath()
  const stored = readConfig(file, { orEmpty: true })
  if (stored.session && stored.url) {
    const api = new ApiClient(
      { url: normaliseUrl(stored.url), session: stored.session, insecure: stored.insecure === true, source: { url: 'config' } },
      { notify: () => {} },
    )
    await api.post('/logout', { auth: 'session', okStatuses: [401, 403], idempotent: true }).catch(() => {})
    await api.close()
  }
  const removed = removeConfig(file)
  if (ctx.json) ctx.emit({ success: true, removed, config: file })
  else ctx.out(removed ? `logged out; removed ${file}` : `not logged in (no ${file})`)
  return 0
}

/** svc whoami: who the configured credentials belong to, on which server. */
export async function whoamiCommand(ctx: Ctx, args: string[]): Promise<number> {
  const { values: v, positionals } = parse(args, CLIENT_HELP.whoami.flags)
  noMore(positionals, 0)
  const api = ctx.api(flagsOf(v))
  const r = await api.get('/svc_api/me')
  const d = r.json?.data ?? {}
  const conn = api.conn
  if (ctx.json) {
    ctx.emit({
      success: true,
      url: conn.url,
      username: d.username ?? null,
      tier: d.tier ?? null,
      via: d.via ?? null,
      key: conn.key ? keyHint(conn.key) : null,
      key_source: conn.source.key ?? null,
      session: Boolean(conn.session),
    })
  } else {
    const how = conn.key
      ? `API key ${keyHint(conn.key)} from ${conn.source.key === 'env' ? 'SVC_API_KEY' : conn.source.key === 'flag' ? '--key' : configPath()}`
      : 'login session'
    ctx.out(`${d.username} (${d.tier ?? 'unknown'} tier) on ${conn.url}, via ${how}`)
  }
  return 0
}

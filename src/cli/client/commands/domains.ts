/** svc domain (custom domains) and svc access (visitor password and expiry of a project or page). */
import { anExpiry, parse, parseExpiry } from '../args.js'
import { CLIENT_HELP } from '../help.js'
import { UsageError } from '../errors.js'
import { flagsOf, need, noMore, readStdin, table, unknownSubcommand, type Ctx } from './context.js'

interface DomainData {
  domain: string
  project: string
  verified: boolean
  primary: boolean
  lost_at?: string | null
  verification: { type: string; name: string; value: string }
}

const record = (d: DomainData) => `${d.verification.name}  TXT  "${d.verification.value}"`

export async function domainCommand(ctx: Ctx, args: string[]): Promise<number> {
  const [sub, ...rest] = args
  // each subcommand parses with its own table: an option of another one is refused
  const path = (name: string) => `/api/domains/${encodeURIComponent(name)}`
  switch (sub) {
    case 'add': {
      const { values: v, positionals } = parse(rest, CLIENT_HELP.domain.subs.add)
      const api = () => ctx.api(flagsOf(v))
      const domain = need(positionals[0], 'DOMAIN')
      noMore(positionals, 1)
      const project = need(v.project, '--project NAME (the folder project this domain serves)')
      const r = await api().post('/api/domains', { json: { domain, project } })
      const d = r.json.data as DomainData
      if (ctx.json) ctx.emit(r.json)
      else {
        ctx.out(`added ${d.domain} -> ${d.project} (not verified yet)`)
        ctx.out('Create this DNS record, then run `svc domain verify ' + d.domain + '`:')
        ctx.out(`  ${record(d)}`)
        ctx.out(`and point ${d.domain} at the service (CNAME or A/AAAA).`)
      }
      return 0
    }
    case 'verify': {
      const { values: v, positionals } = parse(rest, CLIENT_HELP.domain.subs.verify)
      const api = () => ctx.api(flagsOf(v))
      const domain = need(positionals[0], 'DOMAIN')
      noMore(positionals, 1)
      const r = await api().post(`${path(domain)}/verify`, { idempotent: true })
      if (ctx.json) ctx.emit(r.json)
      else ctx.out(`verified ${r.json.data.domain}: it serves ${r.json.data.project}`)
      return 0
    }
    case 'primary': {
      const { values: v, positionals } = parse(rest, CLIENT_HELP.domain.subs.primary)
      const api = () => ctx.api(flagsOf(v))
      const domain = need(positionals[0], 'DOMAIN')
      noMore(positionals, 1)
      const r = await api().call(v.off ? 'DELETE' : 'PUT', `${path(domain)}/primary`)
      const d = r.json.data as DomainData
      if (ctx.json) ctx.emit(r.json)
      else if (d.primary) ctx.out(`${d.domain} is the primary domain of ${d.project}: browsers opening its other URLs are sent there`)
      else ctx.out(`${d.domain} is not the primary domain of ${d.project}: its other URLs serve it again`)
      return 0
    }
    case 'ls':
    case 'list': {
      const { values: v, positionals } = parse(rest, CLIENT_HELP.domain.subs.list)
      const api = () => ctx.api(flagsOf(v))
      noMore(positionals, 0)
      const r = await api().get('/api/domains')
      const list = (r.json.data?.domains ?? []) as DomainData[]
      if (ctx.json) ctx.emit(r.json)
      else {
        ctx.out(
          table(
            ['DOMAIN', 'PROJECT', 'STATUS', 'DNS RECORD'],
            list.map((d) => [
              d.domain,
              d.project,
              d.primary ? 'primary' : d.verified ? 'verified' : d.lost_at ? 'lost' : 'pending',
              d.verified ? '' : record(d),
            ]),
          ),
        )
        ctx.out(`${list.length} of ${r.json.data?.limit ?? '?'} domains`)
      }
      return 0
    }
    case 'rm':
    case 'remove': {
      const { values: v, positionals } = parse(rest, CLIENT_HELP.domain.subs.remove)
      const api = () => ctx.api(flagsOf(v))
      const domain = need(positionals[0], 'DOMAIN')
      noMore(positionals, 1)
      const r = await api().delete(path(domain))
      if (ctx.json) ctx.emit(r.json)
      else ctx.out(`removed ${domain}`)
      return 0
    }
    default:
      throw unknownSubcommand(sub, ['add', 'verify', 'primary', 'list', 'remove'])
  }
}

/** An expiry from the command line: ISO 8601, or a duration from now (30m, 12h, 7d); --expires's table check refuses other text first. */
export function expiryOf(text: string, now = Date.now()): string {
  const at = parseExpiry(text, now)
  if (at === null) throw new UsageError(anExpiry(text, 'expires') ?? `--expires ${JSON.stringify(text)}`, true)
  return at
}

export async function accessCommand(ctx: Ctx, args: string[]): Promise<number> {
  const [sub, ...rest] = args
  // each subcommand parses with its own table: an option of another one is refused
  const show = (a: { name: string; password: boolean; expires_at: string | null; expired: boolean }) =>
    `${a.name}: ${a.password ? 'password' : 'no password'}, ${a.expires_at === null ? 'no expiry' : `${a.expired ? 'expired' : 'expires'} ${a.expires_at}`}`
  switch (sub) {
    case 'set': {
      const { values: v, positionals } = parse(rest, CLIENT_HELP.access.subs.set)
      const api = () => ctx.api(flagsOf(v))
      const name = need(positionals[0], 'NAME')
      noMore(positionals, 1)
      const body: Record<string, unknown> = {}
      if (v['password-stdin']) body.password = (await readStdin()).replace(/\r?\n$/, '')
      else if (v['no-password']) body.password = null
      else if (process.env.SVC_VISITOR_PASSWORD) body.password = process.env.SVC_VISITOR_PASSWORD
      if (v.expires !== undefined) body.expires_at = expiryOf(v.expires)
      else if (v['no-expiry']) body.expires_at = null
      if (Object.keys(body).length === 0)
        throw new UsageError('nothing to set: --password-stdin (or SVC_VISITOR_PASSWORD), --no-password, --expires WHEN or --no-expiry', true)
      const r = await api().call('PUT', `/api/access/${encodeURIComponent(name)}`, { json: body })
      if (ctx.json) ctx.emit(r.json)
      else ctx.out(show(r.json.data))
      return 0
    }
    case 'clear': {
      const { values: v, positionals } = parse(rest, CLIENT_HELP.access.subs.clear)
      const api = () => ctx.api(flagsOf(v))
      const name = need(positionals[0], 'NAME')
      noMore(positionals, 1)
      const r = await api().delete(`/api/access/${encodeURIComponent(name)}`)
      if (ctx.json) ctx.emit(r.json)
      else ctx.out(`${name}: open to everyone`)
      return 0
    }
    case 'ls':
    case 'list': {
      const { values: v, positionals } = parse(rest, CLIENT_HELP.access.subs.list)
      const api = () => ctx.api(flagsOf(v))
      noMore(positionals, 0)
      const r = await api().get('/api/access')
      if (ctx.json) ctx.emit(r.json)
      else for (const a of r.json.data?.access ?? []) ctx.out(show(a))
      return 0
    }
    default:
      throw unknownSubcommand(sub, ['set', 'clear', 'list'])
  }
}

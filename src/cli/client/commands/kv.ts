/** svc kv: get, set, incr, rm and ls on the key-value store. */
import { intOption, parse } from '../args.js'
import { CLIENT_HELP } from '../help.js'
import { ApiError, CliError, UsageError } from '../errors.js'
import { flagsOf, localTime, need, noMore, preview, readLocal, readStdinBytes, table, unknownSubcommand, type Ctx } from './context.js'

const KV_TYPES = ['json', 'text', 'number']

/** The value and data_type to store, from the text given on the command line. */
/**
 * A whole number written with more digits than a double holds exactly (above 2^53) would be
 * stored as another number, silently: refused when a number type was asked for, with the way
 * to keep it as text (without a type it is inferred as text).
 */
const inexactWhole = (text: string, n: number): boolean => /^\s*-?\d+\s*$/.test(text) && !Number.isSafeInteger(n)
function exactNumber(text: string, n: number): number {
  if (inexactWhole(text, n))
    throw new UsageError(`${text.trim()} cannot be stored exactly as a number (at most ${Number.MAX_SAFE_INTEGER}); keep it as text with --type text`)
  return n
}

export function kvValue(text: string, type: string | undefined): { value: unknown; data_type: string } {
  if (type !== undefined && !KV_TYPES.includes(type)) throw new UsageError(`--type must be one of ${KV_TYPES.join(', ')}`)
  if (type === 'text') return { value: text, data_type: 'text' }
  if (type === 'number') {
    const n = Number(text)
    if (text.trim() === '' || !Number.isFinite(n)) throw new UsageError(`"${text}" is not a number`)
    return { value: exactNumber(text, n), data_type: 'number' }
  }
  let value: unknown
  try {
    value = JSON.parse(text) as unknown
  } catch {
    if (type === 'json') throw new UsageError('the value is not valid JSON (use --type text for plain text)')
    return { value: text, data_type: 'text' }
  }
  // too many digits for a number: without a type it stays text (every digit kept)
  if (typeof value === 'number' && type === undefined && inexactWhole(text, value)) return { value: text.trim(), data_type: 'text' }
  if (typeof value === 'number') exactNumber(text, value)
  // a bare number is stored as a number, so `svc kv incr` can add to it
  return { value, data_type: type === undefined && typeof value === 'number' ? 'number' : 'json' }
}

/**
 * A value read from a file or stdin: UTF-8 text, refused otherwise (decoding would store U+FFFD
 * for the bytes, silently), a leading byte-order mark dropped (it is no part of the value, and
 * JSON after it would be stored as text).
 */
function valueText(bytes: Buffer, from: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    throw new CliError(`${from} is not UTF-8 text; a key-value entry holds text, a number or JSON`)
  }
}

/** The server's rule for a key being written (1601 length, 1606 format); reads take any string. */
const KEY_RE = /^[A-Za-z][A-Za-z0-9_-]*$/
const KEY_MAX = 100

/**
 * get and rm take any key, since an entry stored before the key rules may hold one that breaks
 * them, so the server answers "does not exist" (1604) where set and incr answer 1606 or 1601.
 * Such an answer says why, in the words set would use.
 */
async function lookup<T>(key: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (e) {
    const why =
      key.length > KEY_MAX
        ? `a key has at most ${KEY_MAX} characters (error 1601)`
        : !KEY_RE.test(key)
          ? 'a key starts with an ASCII letter and has only a-z, A-Z, 0-9, _ and - (error 1606)'
          : null
    if (!(e instanceof ApiError) || e.code !== 1604 || why === null) throw e
    const note = `${JSON.stringify(key)} is not a valid key: ${why}; svc kv set refuses it, and only an entry stored before the key rules can have it`
    throw new ApiError(e.status, e.code, e.type, e.message, note, e.body, e.retryAfter)
  }
}

/**
 * public_incr to send: --counter marks, --no-counter unmarks (the table refuses both), neither
 * sends nothing, so the entry keeps its mark, as the API does when the field is left out.
 */
const counterFlag = (v: { counter?: boolean; 'no-counter'?: boolean }): boolean | undefined =>
  v.counter === true ? true : v['no-counter'] === true ? false : undefined

const showValue = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v, null, 2))

/**
 * svc kv ls --public USER: every public entry of USER, as a page without a key reads them
 * (GET /svc_api/data/public-list/{username}, decision 317), by its key cursor.
 */
async function publicList(ctx: Ctx, api: () => ReturnType<Ctx['api']>, user: string, prefix: string | undefined, perPage: number): Promise<number> {
  if (user === '') throw new UsageError('--public takes a username')
  const items: any[] = []
  let after = ''
  for (;;) {
    const r = await api().get(`/svc_api/data/public-list/${encodeURIComponent(user)}`, {
      query: { after, per_page: perPage, ...(prefix === undefined ? {} : { prefix }) },
    })
    const data = r.json?.data ?? {}
    const got: any[] = Array.isArray(data.items) ? data.items : []
    items.push(...got)
    if (got.length === 0 || typeof data.next_after !== 'string') break
    after = data.next_after
  }
  if (ctx.json) {
    ctx.emit({ success: true, data: { items } })
    return 0
  }
  ctx.out(
    table(
      ['KEY', 'TYPE', 'UPDATED', 'VALUE'],
      items.map((it) => [String(it.key), String(it.data_type ?? ''), localTime(it.updated_at), preview(it.value)]),
    ),
  )
  ctx.out(`${items.length} public key${items.length === 1 ? '' : 's'} of ${user}`)
  return 0
}

export async function kvCommand(ctx: Ctx, args: string[]): Promise<number> {
  const [sub, ...rest] = args
  // each subcommand parses with its own table: an option of another one is refused
  switch (sub) {
    case 'get': {
      const { values: v, positionals } = parse(rest, CLIENT_HELP.kv.subs.get)
      const api = () => ctx.api(flagsOf(v))
      const key = need(positionals[0], 'KEY')
      noMore(positionals, 1)
      const r = await lookup(key, () => api().get('/svc_api/data/get', { query: { key } }))
      if (ctx.json) ctx.emit(r.json)
      else ctx.out(showValue(r.json?.data?.value))
      return 0
    }
    case 'set': {
      const { values: v, positionals } = parse(rest, CLIENT_HELP.kv.subs.set)
      const api = () => ctx.api(flagsOf(v))
      const key = need(positionals[0], 'KEY')
      let text: string
      if (v.file !== undefined) {
        noMore(positionals, 1)
        text = v.file === '-' ? valueText(await readStdinBytes(), 'stdin') : valueText(readLocal(v.file), v.file)
      } else if (positionals[1] === '-') {
        text = valueText(await readStdinBytes(), 'stdin')
      } else {
        // an empty argument is a value (the empty text, as `--file` of an empty file gives)
        if (positionals[1] === undefined) throw new UsageError('missing VALUE (or --file F, or - for stdin)', true)
        text = positionals[1]
        noMore(positionals, 2)
      }
      const body: Record<string, unknown> = { key, ...kvValue(text, v.type) }
      // --public shares, --no-public makes private again, neither keeps what it was (as the API)
      if (v.public === true || v['no-public'] === true) body.is_public = v.public === true
      const counter = counterFlag(v)
      if (counter !== undefined) body.public_incr = counter
      if (v.tags !== undefined)
        body.tags = v.tags
          .split(',')
          .map((t) => t.trim())
          .filter(Boolean)
      const r = await api().post('/svc_api/data/store', { json: body, idempotent: true })
      const d = r.json?.data ?? {}
      if (ctx.json) ctx.emit(r.json)
      else ctx.out(`stored ${d.key ?? key} (${d.data_type ?? body.data_type}, ${d.is_public ? 'public' : 'private'}${d.public_incr ? ', counter' : ''})`)
      return 0
    }
    case 'incr': {
      const { values: v, positionals } = parse(rest, CLIENT_HELP.kv.subs.incr)
      const api = () => ctx.api(flagsOf(v))
      const key = need(positionals[0], 'KEY')
      const byText = v.by ?? positionals[1] ?? '1'
      noMore(positionals, v.by !== undefined ? 1 : 2)
      const by = Number(byText)
      // --by is checked by its table; BY, the argument, here: both before anything is sent
      if (!Number.isFinite(by) || byText.trim() === '') throw new UsageError(`"${byText}" is not a number`, true)
      const counter = counterFlag(v)
      const r = await api().post('/svc_api/data/incr', { json: { key, by, ...(counter !== undefined ? { public_incr: counter } : {}) } })
      if (ctx.json) ctx.emit(r.json)
      else ctx.out(showValue(r.json?.data?.value))
      return 0
    }
    case 'rm':
    case 'delete': {
      const { values: v, positionals } = parse(rest, CLIENT_HELP.kv.subs.rm)
      const api = () => ctx.api(flagsOf(v))
      const key = need(positionals[0], 'KEY')
      noMore(positionals, 1)
      const r = await lookup(key, () => api().delete('/svc_api/data/delete', { query: { key } }))
      if (ctx.json) ctx.emit(r.json)
      else ctx.out(`deleted ${key}`)
      return 0
    }
    case 'ls':
    case 'list': {
      const { values: v, positionals } = parse(rest, CLIENT_HELP.kv.subs.ls)
      const api = () => ctx.api(flagsOf(v))
      noMore(positionals, 0)
      const perPage = intOption(v['per-page'], 'per-page', 100)
      const one = v.page !== undefined
      let page = intOption(v.page, 'page', 1)
      const prefix = typeof v.prefix === 'string' && v.prefix !== '' ? v.prefix : undefined
      if (typeof v.public === 'string') return publicList(ctx, api, v.public, prefix, perPage)
      const items: any[] = []
      let last: any
      // listing everything goes by the key cursor (`after`, from '' = the first key), which
      // keys written or deleted meanwhile cannot shift; a server without it (the spec has
      // none) answers no next_after, and the rest goes by page
      let after: string | undefined = one ? undefined : ''
      for (;;) {
        const where = after === undefined ? { page } : { after }
        const r = await api().get('/svc_api/data/list', { query: { ...where, per_page: perPage, ...(prefix === undefined ? {} : { prefix }) } })
        last = r.json?.data ?? {}
        const got = Array.isArray(last.items) ? last.items : []
        // a server without the prefix filter (the spec has none) answers every key: never show those
        items.push(...(prefix === undefined ? got : got.filter((it: any) => String(it.key).startsWith(prefix))))
        if (one || got.length === 0) break
        if (after !== undefined && typeof last.next_after === 'string') {
          after = last.next_after
          continue
        }
        if (after !== undefined && last.next_after === null) break
        after = undefined
        if (page >= Number(last.total_pages ?? page)) break
        page++
      }
      if (ctx.json) {
        ctx.emit({ success: true, data: { items, total: last.total ?? items.length, quota: last.quota ?? null, usage: last.usage ?? null } })
        return 0
      }
      const rows = items.map((it) => [
        String(it.key),
        String(it.data_type ?? ''),
        it.is_public ? 'public' : 'private',
        localTime(it.updated_at),
        preview(it.value),
      ])
      ctx.out(table(['KEY', 'TYPE', 'READ', 'UPDATED', 'VALUE'], rows))
      const usage = last.usage && last.quota ? `; ${last.usage.keys}/${last.quota.max_keys} keys used` : ''
      ctx.out(`${last.total ?? items.length} key${(last.total ?? items.length) === 1 ? '' : 's'}${usage}`)
      return 0
    }
    default:
      throw unknownSubcommand(sub, ['get', 'set', 'incr', 'rm', 'ls'])
  }
}

/** svc forms: forms and their submissions. */
import fs from 'node:fs'
import { encodePath } from '../api.js'
import { parse } from '../args.js'
import { CLIENT_HELP } from '../help.js'
import { ApiError, UsageError } from '../errors.js'
import { formatBytes } from '../progress.js'
import { fieldHeaders, toCsv } from '../../../util/csv.js'
import { flagsOf, localTime, need, noMore, preview, printable, table, unknownSubcommand, type Ctx } from './context.js'

/** svc forms: list, export and delete submissions, and the notifications of a form (webhook, e-mail, delivery log). */
export async function formsCommand(ctx: Ctx, args: string[]): Promise<number> {
  const [sub, ...rest] = args
  switch (sub) {
    case 'export':
      return exportCommand(ctx, rest)
    case 'ls':
    case 'list':
      return listCommand(ctx, rest)
    case 'notify':
      return notifyCommand(ctx, rest)
    case 'rotate-secret':
      return rotateCommand(ctx, rest)
    case 'deliveries':
      return deliveriesCommand(ctx, rest)
    case 'redeliver':
      return redeliverCommand(ctx, rest)
    case 'delete-submission':
      return deleteSubmissionCommand(ctx, rest)
    default:
      throw unknownSubcommand(sub, Object.keys(CLIENT_HELP.forms.subs))
  }
}

async function listCommand(ctx: Ctx, rest: string[]): Promise<number> {
  const { values: v, positionals } = parse(rest, CLIENT_HELP.forms.subs.ls)
  noMore(positionals, 0)
  const r = await ctx.api(flagsOf(v)).get('/svc_api/forms/list')
  if (ctx.json) ctx.emit(r.json)
  else {
    const forms: any[] = r.json?.data?.forms ?? []
    if (forms.length === 0) ctx.out('no forms')
    else
      ctx.out(
        table(
          ['ID', 'SLUG', 'NAME', 'ACTIVE', 'SUBMISSIONS'],
          forms.map((f) => [String(f.id), String(f.form_slug), preview(f.form_name), f.is_active ? 'yes' : 'no', String(f.submission_count ?? 0)]),
        ),
      )
  }
  return 0
}

interface WebhookData {
  url: string
  enabled: boolean
  secret_hint: string
  secret?: string
  updated_at: string
}
interface EmailData {
  enabled: boolean
  mode: string
  recipients: string[]
  smtp_configured: boolean
}

const EMAIL_MODES: Record<string, { enabled: boolean; mode?: string }> = {
  each: { enabled: true, mode: 'each' },
  on: { enabled: true, mode: 'each' },
  digest: { enabled: true, mode: 'digest' },
  off: { enabled: false },
}

const showWebhook = (w: WebhookData | null) => (w ? `webhook: ${w.url}${w.enabled ? '' : ' (paused)'}, signing secret ${w.secret_hint}` : 'webhook: none')
const showEmail = (e: EmailData) =>
  `email: ${e.enabled ? (e.mode === 'digest' ? 'digest' : 'each submission') : 'off'}` +
  (e.enabled ? (e.recipients.length ? ` to ${e.recipients.join(', ')}` : ' (no verified address yet: add one in the dashboard)') : '') +
  (e.smtp_configured ? '' : ' (the server has no SMTP configured)')
const secretLines = (w: WebhookData) => [
  `signing secret (shown once, store it now): ${w.secret}`,
  'receivers check X-Svc-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">',
]

/**
 * svc forms notify FORM_ID: shows the form's webhook and e-mail setting, or changes them
 * (--webhook URL | --no-webhook, --email each|digest|off). A new webhook prints its secret once.
 */
async function notifyCommand(ctx: Ctx, rest: string[]): Promise<number> {
  const { values: v, positionals } = parse(rest, CLIENT_HELP.forms.subs.notify)
  const id = need(positionals[0], 'the form id (FORM_ID)')
  noMore(positionals, 1)
  const email = v.email === undefined ? undefined : EMAIL_MODES[v.email]
  // the table's check took only these
  if (v.email !== undefined && !email) throw new UsageError(`--email takes one of ${Object.keys(EMAIL_MODES).join(', ')}`, true)
  const api = ctx.api(flagsOf(v))
  const form = encodePath(id)
  const out: { webhook?: WebhookData | null; email?: EmailData } = {}
  const messages: string[] = []
  if (v.webhook !== undefined) {
    const r = await api.call('PUT', `/svc_api/forms/webhook/${form}`, { json: { url: v.webhook, enabled: !v.paused } })
    out.webhook = r.json.data as WebhookData
  } else if (v['no-webhook']) {
    await api.delete(`/svc_api/forms/webhook/${form}`)
    out.webhook = null
    messages.push('webhook removed')
  }
  if (email) {
    // 'off' keeps the stored mode, so switching back on restores it
    const body = email.mode ? email : { enabled: false, mode: ((await api.get(`/svc_api/forms/email/${form}`)).json.data as EmailData).mode }
    out.email = (await api.call('PUT', `/svc_api/forms/email/${form}`, { json: body })).json.data as EmailData
  }
  if (out.webhook === undefined) out.webhook = await getWebhook(api, form)
  if (out.email === undefined) out.email = (await api.get(`/svc_api/forms/email/${form}`)).json.data as EmailData
  if (ctx.json) ctx.emit({ success: true, data: out })
  else {
    for (const m of messages) ctx.out(m)
    ctx.out(showWebhook(out.webhook))
    if (out.webhook?.secret) for (const l of secretLines(out.webhook)) ctx.out(l)
    ctx.out(showEmail(out.email))
  }
  return 0
}

/** The form's webhook, or null when it has none (1422). */
async function getWebhook(api: ReturnType<Ctx['api']>, form: string): Promise<WebhookData | null> {
  try {
    return (await api.get(`/svc_api/forms/webhook/${form}`)).json.data as WebhookData
  } catch (e) {
    if (e instanceof ApiError && e.code === 1422) return null
    throw e
  }
}

async function rotateCommand(ctx: Ctx, rest: string[]): Promise<number> {
  const { values: v, positionals } = parse(rest, CLIENT_HELP.forms.subs['rotate-secret'])
  const id = need(positionals[0], 'the form id (FORM_ID)')
  noMore(positionals, 1)
  const r = await ctx.api(flagsOf(v)).post(`/svc_api/forms/webhook/${encodePath(id)}/rotate`)
  if (ctx.json) ctx.emit(r.json)
  else for (const l of secretLines(r.json.data as WebhookData)) ctx.out(l)
  return 0
}

async function deliveriesCommand(ctx: Ctx, rest: string[]): Promise<number> {
  const { values: v, positionals } = parse(rest, CLIENT_HELP.forms.subs.deliveries)
  const id = need(positionals[0], 'the form id (FORM_ID)')
  noMore(positionals, 1)
  const r = await ctx.api(flagsOf(v)).get(`/svc_api/forms/deliveries/${encodePath(id)}`)
  if (ctx.json) ctx.emit(r.json)
  else {
    const list: any[] = r.json?.data ?? []
    if (list.length === 0) ctx.out('no deliveries')
    else
      ctx.out(
        table(
          ['ID', 'CREATED', 'KIND', 'TARGET', 'STATUS', 'TRIES', 'LAST ANSWER'],
          list.map((d) => [
            String(d.id),
            localTime(d.created_at),
            String(d.kind),
            String(d.target),
            d.status === 'pending' && d.next_try_at ? `pending (next ${localTime(d.next_try_at)})` : String(d.status),
            String(d.tries),
            d.last_error ?? (d.last_status ? `HTTP ${d.last_status}` : ''),
          ]),
        ),
      )
  }
  return 0
}

async function redeliverCommand(ctx: Ctx, rest: string[]): Promise<number> {
  const { values: v, positionals } = parse(rest, CLIENT_HELP.forms.subs.redeliver)
  const id = need(positionals[0], 'the delivery id (DELIVERY_ID, from svc forms deliveries FORM_ID)')
  noMore(positionals, 1)
  const r = await ctx.api(flagsOf(v)).post(`/svc_api/forms/redeliver/${encodePath(id)}`)
  if (ctx.json) ctx.emit(r.json)
  else ctx.out(`delivery ${id} queued again (${r.json.data.kind} to ${r.json.data.target})`)
  return 0
}

/** svc forms delete-submission: one submission and its files (ids from svc forms export). */
async function deleteSubmissionCommand(ctx: Ctx, rest: string[]): Promise<number> {
  const { values: v, positionals } = parse(rest, CLIENT_HELP.forms.subs['delete-submission'])
  const id = need(positionals[0], 'the submission id (SUBMISSION_ID, from svc forms export FORM_ID)')
  noMore(positionals, 1)
  const r = await ctx.api(flagsOf(v)).delete(`/svc_api/forms/delete_submission/${encodePath(id)}`)
  if (ctx.json) ctx.emit(r.json)
  else ctx.out(`submission ${id} deleted, with its files (form ${r.json.data.form_id})`)
  return 0
}

/** svc forms export: submissions as JSON, a table, or CSV (the server's, else converted here). */
async function exportCommand(ctx: Ctx, rest: string[]): Promise<number> {
  const { values: v, positionals } = parse(rest, CLIENT_HELP.forms.subs.export)
  const id = need(positionals[0], 'the form id (FORM_ID)')
  noMore(positionals, 1)
  const api = ctx.api(flagsOf(v))
  const r = await api.get(`/svc_api/forms/export/${encodePath(id)}`, { query: v.csv ? { format: 'csv' } : undefined, anyBody: v.csv })
  const write = (text: string) => {
    if (v.output) {
      fs.writeFileSync(v.output, text)
      ctx.rep.note(`wrote ${v.output} (${formatBytes(Buffer.byteLength(text))})`)
    } else process.stdout.write(text)
  }
  const total = Number(r.headers['x-total-count'])
  const exported = Number(r.headers['x-exported-count'])
  if (Number.isFinite(total) && Number.isFinite(exported) && exported < total) {
    ctx.rep.note(`warning: exported ${exported} of ${total} submissions (the per-export row quota form_export_rows)`)
  }
  const data = r.json?.data
  if (v.csv) {
    write(/csv/i.test(r.contentType) || data === undefined ? r.text : toCsv(submissionRows(data)))
    return 0
  }
  if (ctx.json) {
    write(`${JSON.stringify(r.json, null, 2)}\n`)
    return 0
  }
  const rows = submissionRows(data)
  const form = data?.form ?? {}
  const head = `form ${printable(String(form.form_name ?? id))}${form.form_slug ? ` (${form.form_slug})` : ''}: ${data?.exported_count ?? rows.length - 1} submission${(data?.exported_count ?? rows.length - 1) === 1 ? '' : 's'}\n`
  write(
    `${head}${
      rows.length > 1
        ? `${table(
            rows[0].map(printable),
            rows.slice(1).map((r) => r.map((c) => preview(c))),
          )}\n`
        : ''
    }`,
  )
  return 0
}

/** Rows (with a header row) of exported submissions: id, created_at, is_read, then each field (fieldHeaders). */
export function submissionRows(data: any): string[][] {
  const subs: any[] = Array.isArray(data?.submissions) ? data.submissions : []
  const fieldNames: string[] = []
  const cfg: any[] = Array.isArray(data?.form?.fields_config) ? data.form.fields_config : []
  for (const f of cfg) if (typeof f?.name === 'string' && !fieldNames.includes(f.name)) fieldNames.push(f.name)
  for (const s of subs) for (const k of Object.keys(s?.data ?? {})) if (!fieldNames.includes(k)) fieldNames.push(k)
  const cell = (x: unknown) => (x === undefined || x === null ? '' : typeof x === 'string' ? x : JSON.stringify(x))
  // own keys only: a submission without a field named "__proto__" or "constructor" has no value
  // there, not Object.prototype's member
  const field = (s: any, n: string): unknown => (s?.data !== null && typeof s?.data === 'object' && Object.hasOwn(s.data, n) ? s.data[n] : undefined)
  const fixed = ['id', 'created_at', 'is_read']
  return [
    [...fixed, ...fieldHeaders(fixed, fieldNames)],
    ...subs.map((s) => [cell(s.id), cell(s.created_at), cell(s.is_read), ...fieldNames.map((n) => cell(field(s, n)))]),
  ]
}

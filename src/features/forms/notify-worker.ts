import crypto from 'node:crypto'
import http from 'node:http'
import https from 'node:https'
import net from 'node:net'
import type { Deps } from '../../deps.js'
import { claimDue, notifyStore, type DeliveryRow } from './notify-store.js'
import { guardedLookup, isForbiddenAddress } from './ssrf.js'
import { submissionMail, type Mailer } from './notify-mail.js'
import type { SubmissionEvent } from './notify-store.js'

const BATCH = 20
/**
 * One digest mail: every due row of its form and address, up to this many submissions and
 * this many bytes of their JSON (the mail carries each value twice, text and HTML, so a
 * full one stays far below the usual 10 MB limit of SMTP servers); the rest go in the next.
 */
const DIGEST_MAX_SUBMISSIONS = 100
const DIGEST_MAX_BYTES = 1024 * 1024
/**
 * How long a claim holds a row; an instance that dies mid-delivery frees it after this. It
 * outlasts any try however WEBHOOK_TIMEOUT and SMTP_TIMEOUT are set (a try is cut at its
 * timeout; the batch's bookkeeping follows), with room to spare, so no other instance claims
 * a row whose try is still running and sends it twice.
 */
export const leaseMs = (c: Pick<Deps['config'], 'webhookTimeoutMs' | 'smtpTimeoutMs'>): number =>
  Math.max(2 * 60_000, 4 * Math.max(c.webhookTimeoutMs, c.smtpTimeoutMs))
/** The longest wait between two tries, however many failed before. */
const MAX_BACKOFF_MS = 3_600_000

/** HMAC-SHA256 of `${timestamp}.${body}` with the form's secret, hex: the v1 of X-Svc-Signature. */
export function signature(secret: string, timestamp: number, body: string): string {
  return crypto.createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')
}

/**
 * Where a delivery goes after its `tries`-th failed try at `now`: tried again NOTIFY_RETRY_BASE
 * after the first failure, doubling with each failure up to MAX_BACKOFF_MS apart; a next try
 * past the deadline (NOTIFY_MAX_AGE after the submission) is not made, and the delivery fails.
 */
export function retrySchedule(now: number, tries: number, baseMs: number, deadline: number): { next: number; status: 'pending' | 'failed' } {
  const next = now + Math.min(baseMs * 2 ** (tries - 1), MAX_BACKOFF_MS)
  return { next, status: next > deadline ? 'failed' : 'pending' }
}

interface Outcome {
  ok: boolean
  status: number | null
  error: string | null
  /** Not to be tried again: the delivery fails at once (the owner can redeliver). */
  final?: boolean
  /** Where the try went, when not the row's own target (the webhook's URL changed since). */
  target?: string
}

/**
 * One POST of a webhook: 2xx is delivered; anything else (redirects included) is a failed try.
 * The whole try, connection to the last byte of the answer, ends after `timeoutMs`
 * (WEBHOOK_TIMEOUT): a socket idle timeout alone let a receiver that trickles its answer hold
 * the try, and with it this instance's worker, for as long as it liked.
 */
function postWebhook(url: string, body: string, headers: Record<string, string>, blockPrivate: boolean, timeoutMs: number): Promise<Outcome> {
  return new Promise((resolve) => {
    let settled = false
    const settle = (o: Outcome) => {
      if (settled) return
      settled = true
      clearTimeout(deadline)
      resolve(o)
    }
    const u = new URL(url)
    // an IP literal is never looked up, so guardedLookup cannot see it: checked here, as a
    // name's addresses are at connect time (a URL saved while the guard was off stays refused)
    const literal = u.hostname.replace(/^\[|\]$/g, '')
    if (blockPrivate && net.isIP(literal) && isForbiddenAddress(literal))
      return resolve({ ok: false, status: null, error: `${literal} is a forbidden address` })
    const mod = u.protocol === 'https:' ? https : http
    const req = mod.request(
      u,
      {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
        lookup: guardedLookup(blockPrivate),
        agent: false,
      },
      (res) => {
        res.resume()
        res.on('end', () => {
          const status = res.statusCode ?? 0
          settle({ ok: status >= 200 && status < 300, status, error: status >= 200 && status < 300 ? null : `answered HTTP ${String(status)}` })
        })
        res.on('error', (e) => settle({ ok: false, status: res.statusCode ?? null, error: e.message }))
      },
    )
    const deadline = setTimeout(() => {
      settle({ ok: false, status: null, error: `no complete answer within ${timeoutMs / 1000} s` })
      req.destroy()
    }, timeoutMs)
    req.on('error', (e) => settle({ ok: false, status: null, error: e.message.slice(0, 500) }))
    req.end(body)
  })
}

export interface Notifier {
  /** Delivers what is due now; returns how many attempts were made. */
  runOnce(): Promise<number>
  stop(): Promise<void>
}

/**
 * The outbox worker of one instance: every NOTIFY_POLL it claims due deliveries (claimDue:
 * no two instances hold the same row), tries each once, and records the outcome. A failed
 * try is retried with exponential backoff (NOTIFY_RETRY_BASE, doubling, at most an hour
 * apart) until its deadline (NOTIFY_MAX_AGE), then marked failed for the owner to redeliver.
 * The outbox is in the database, so a restart loses nothing: rows claimed by a process that
 * died are taken again once their lease ends.
 */
export function startNotifier(deps: Pick<Deps, 'db' | 'clock' | 'config'>, mailer: Mailer | null, log: { warn(o: object, m: string): void }): Notifier {
  const { db, clock, config } = deps
  const worker = crypto.randomUUID()
  const lease = leaseMs(config)
  let timer: NodeJS.Timeout | null = null
  let running: Promise<number> | null = null
  let stopped = false

  async function record(r: DeliveryRow, o: Outcome): Promise<void> {
    const now = clock.now()
    const tries = Number(r.tries) + 1
    if (o.ok) {
      const target = o.target ? { target: o.target } : {}
      await notifyStore.finish(db.k, r.id, worker, {
        status: 'delivered',
        tries,
        last_status: o.status,
        last_error: null,
        delivered_at: now,
        updated_at: now,
        ...target,
      })
      return
    }
    const { next, status } = retrySchedule(now, tries, config.notifyRetryBaseMs, Number(r.deadline_at))
    const patch = { tries, next_at: next, last_status: o.status, last_error: o.error, updated_at: now, ...(o.target ? { target: o.target } : {}) }
    await notifyStore.finish(db.k, r.id, worker, { ...patch, status: o.final ? 'failed' : status })
  }

  /**
   * A try goes to the form's webhook as it is now: its URL and secret, so a corrected URL
   * takes the retries (and redeliveries) too. A paused or removed webhook is not called; the
   * delivery fails at once, and the owner redelivers it once the webhook is back.
   */
  async function deliverWebhook(r: DeliveryRow): Promise<Outcome> {
    const hook = await notifyStore.webhook(db.k, r.form_id)
    if (!hook) return { ok: false, status: null, error: 'the form has no webhook any more', final: true }
    if (!hook.enabled) return { ok: false, status: null, error: 'the webhook is paused: resume it, then redeliver', final: true }
    const t = Math.floor(clock.now() / 1000)
    const o = await postWebhook(
      hook.url,
      r.payload,
      {
        'user-agent': 'svc-webhook/1',
        'x-svc-event': 'form.submission',
        'x-svc-delivery': r.id,
        'x-svc-timestamp': String(t),
        'x-svc-signature': `t=${t},v1=${signature(hook.secret, t, r.payload)}`,
      },
      config.webhookBlockPrivate,
      config.webhookTimeoutMs,
    )
    return hook.url === r.target ? o : { ...o, target: hook.url }
  }

  /**
   * A mail goes out only while the form's e-mail is on and its address is still one of the
   * owner's verified ones (rows of one mail share form and address), as a webhook's try
   * follows the webhook as it is then: a mail queued before the owner removed the address
   * or turned e-mail off fails at once instead, for the owner to redeliver.
   */
  async function deliverMail(rows: DeliveryRow[]): Promise<Outcome> {
    if (!mailer) return { ok: false, status: null, error: 'no SMTP server configured (SMTP_URL)' }
    const [setting, addresses] = await Promise.all([notifyStore.emailSetting(db.k, rows[0].form_id), notifyStore.verifiedAddresses(db.k, rows[0].user_id)])
    if (!setting?.enabled) return { ok: false, status: null, error: "the form's e-mail is off: turn it on, then redeliver", final: true }
    if (!addresses.some((a) => a.address === rows[0].target))
      return { ok: false, status: null, error: 'the address is no longer a verified notification address', final: true }
    const events = rows.map((r) => JSON.parse(r.payload) as SubmissionEvent)
    try {
      await mailer.send({ to: rows[0].target, ...submissionMail(events) })
      return { ok: true, status: null, error: null }
    } catch (e) {
      return { ok: false, status: null, error: (e as Error).message.slice(0, 500) }
    }
  }

  /**
   * The rows whose submission is still one to notify: not deleted, not marked as spam since it
   * was queued (the owner's call outlives the queue, as a removed address does, decision 236).
   */
  async function stillWanted(rows: DeliveryRow[]): Promise<Set<string>> {
    const ids = [...new Set(rows.map((r) => r.submission_id))]
    const wanted = new Set<string>()
    for (let i = 0; i < ids.length; i += 500) {
      const found = await db.k
        .selectFrom('form_submissions')
        .select('id')
        .where('id', 'in', ids.slice(i, i + 500))
        .where('is_spam', '=', 0)
        .execute()
      for (const f of found) wanted.add(f.id)
    }
    return wanted
  }
  const UNWANTED: Outcome = { ok: false, status: null, error: 'the submission was deleted or marked as spam since it was queued', final: true }

  async function tick(): Promise<number> {
    let attempts = 0
    for (let round = 0; round < 10 && !stopped; round++) {
      const now = clock.now()
      const rows = await claimDue(db, worker, now, now + lease, BATCH)
      if (rows.length === 0) break
      // digests: every due row of a (form, address) goes out in one mail, not only the ones
      // this batch happened to claim (claimDue orders by time across all forms)
      const digests = new Map<string, DeliveryRow[]>()
      for (const r of rows) {
        if (r.kind === 'digest') {
          const k = `${r.form_id}\n${r.target}`
          digests.set(k, [...(digests.get(k) ?? []), r])
        }
      }
      for (const group of digests.values()) {
        const more = DIGEST_MAX_SUBMISSIONS - group.length
        if (more > 0) group.push(...(await claimDue(db, worker, now, now + lease, more, { formId: group[0].form_id, target: group[0].target })))
        group.sort((a, b) => Number(a.created_at) - Number(b.created_at) || (a.id < b.id ? -1 : 1))
        let bytes = 0
        let fit = 0
        while (fit < group.length && fit < DIGEST_MAX_SUBMISSIONS && (fit === 0 || bytes + Buffer.byteLength(group[fit].payload) <= DIGEST_MAX_BYTES))
          bytes += Buffer.byteLength(group[fit++].payload)
        await notifyStore.release(
          db.k,
          group.splice(fit).map((r) => r.id),
          worker,
        )
      }
      const wanted = await stillWanted([...rows, ...[...digests.values()].flat()])
      let dropped = 0
      for (const [k, group] of digests) {
        const unwanted = group.filter((r) => !wanted.has(r.submission_id))
        for (const r of unwanted) await record(r, UNWANTED)
        dropped += unwanted.length
        if (unwanted.length === group.length) digests.delete(k)
        else if (unwanted.length > 0)
          digests.set(
            k,
            group.filter((r) => wanted.has(r.submission_id)),
          )
      }
      await Promise.all([
        ...rows
          .filter((r) => r.kind !== 'digest')
          .map(async (r) => {
            const o = !wanted.has(r.submission_id) ? UNWANTED : r.kind === 'webhook' ? await deliverWebhook(r) : await deliverMail([r])
            if (!o.ok) log.warn({ delivery: r.id, kind: r.kind, tries: Number(r.tries) + 1, error: o.error }, 'form notification failed')
            await record(r, o)
          }),
        ...[...digests.values()].map(async (group) => {
          const o = await deliverMail(group)
          if (!o.ok) log.warn({ deliveries: group.length, error: o.error }, 'form notification digest failed')
          for (const r of group) await record(r, o)
        }),
      ])
      attempts += rows.filter((r) => r.kind !== 'digest').length + [...digests.values()].reduce((n, g) => n + g.length, 0) + dropped
    }
    return attempts
  }

  const runOnce = async (): Promise<number> => {
    while (running) await running.catch(() => 0)
    running = tick()
    try {
      return await running
    } finally {
      running = null
    }
  }

  const schedule = () => {
    if (stopped) return
    timer = setTimeout(() => {
      runOnce()
        .catch((err: unknown) => log.warn({ err }, 'form notification worker failed'))
        .finally(schedule)
    }, config.notifyPollMs)
    timer.unref()
  }
  schedule()

  return {
    runOnce,
    async stop() {
      stopped = true
      if (timer) clearTimeout(timer)
      await running?.catch(() => {})
    },
  }
}

import type { Deps } from '../../deps.js'
import type { Trx } from '../../db/kysely.js'
import type { User } from '../../auth/users.js'
import { newId, randomString, sha256hex } from '../../auth/tokens.js'
import { AppError } from '../../errors/app-error.js'
import { isoMicros } from '../../util/time.js'
import { formStore, type FormRow } from './store.js'
import { bad } from './fields.js'
import { notifyStore, type DeliveryRow, type EventFile, type SubmissionEvent } from './notify-store.js'
import { checkTarget, parseWebhookUrl } from './ssrf.js'
import { mailFailure, type Mailer } from './notify-mail.js'
import type { WindowRule } from '../../limits/tiers.js'

export const MAX_ADDRESSES = 5
const DELIVERY_LOG_LIMIT = 100
/** Verification mails: one per address per 10 minutes, 20 per account per day. */
const VERIFY_PER_ADDRESS: WindowRule[] = [{ name: 'notify-verify-address', kind: 'sliding', ms: 10 * 60_000, limit: 1 }]
const VERIFY_PER_USER: WindowRule[] = [{ name: 'notify-verify-user', kind: 'sliding', ms: 24 * 3600_000, limit: 20 }]
const ADDRESS_RE = /^[^\s@<>()",;:\\[\]]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/

const ENABLED_FLAG = { zh: 'enabled 须为 true 或 false', en: 'enabled must be true or false' }
const newSecret = () => `whsec_${randomString(40)}`
const hint = (secret: string) => `${secret.slice(0, 6)}…${secret.slice(-4)}`

/** A delivery as the owner sees it in the log. */
export function deliveryView(r: DeliveryRow) {
  return {
    id: r.id,
    kind: r.kind,
    target: r.target,
    submission_id: r.submission_id,
    status: r.status,
    tries: Number(r.tries),
    last_status: r.last_status === null ? null : Number(r.last_status),
    last_error: r.last_error,
    next_try_at: r.status === 'pending' ? isoMicros(Number(r.next_at)) : null,
    created_at: isoMicros(Number(r.created_at)),
    delivered_at: r.delivered_at === null ? null : isoMicros(Number(r.delivered_at)),
  }
}

/**
 * Form notifications: a signed webhook and an e-mail setting per form, the owner's verified
 * addresses, and the outbox. `enqueue` runs inside the submission's transaction, so a stored
 * submission always has its deliveries and a refused one has none.
 */
export function createNotifyService(deps: Pick<Deps, 'db' | 'clock' | 'config' | 'limits'>, mailer: Mailer | null) {
  const { db, clock, config, limits } = deps
  /** The caller's form (1611 when it is not there), read in `q`: a writer's transaction reads it again under the owner's lock. */
  const ownedIn = async (q: Trx | Deps['db']['k'], user: User, formId: string): Promise<FormRow> => {
    const f = formId.length <= 64 ? await formStore.byId(q, user.id, formId) : undefined
    if (!f) throw new AppError('FORM_NOT_FOUND')
    return f
  }
  const owned = (user: User, formId: string): Promise<FormRow> => ownedIn(db.k, user, formId)
  const webhookView = (w: { url: string; secret: string; enabled: number; created_at: number; updated_at: number }, showSecret: boolean) => ({
    url: w.url,
    enabled: !!w.enabled,
    secret_hint: hint(w.secret),
    ...(showSecret ? { secret: w.secret } : {}),
    created_at: isoMicros(Number(w.created_at)),
    updated_at: isoMicros(Number(w.updated_at)),
  })

  return {
    async getWebhook(user: User, formId: string) {
      await owned(user, formId)
      const w = await notifyStore.webhook(db.k, formId)
      if (!w) throw new AppError('WEBHOOK_NOT_FOUND')
      return webhookView(w, false)
    },

    /** Sets the form's webhook; the secret is made (and shown) when the webhook is created. */
    async setWebhook(user: User, formId: string, body: unknown) {
      await owned(user, formId)
      const b = (body ?? {}) as { url?: unknown; enabled?: unknown }
      if (typeof b !== 'object' || Array.isArray(b))
        throw bad({ zh: '请求体须为 {"url": "https://...", "enabled": true}', en: 'the body must be {"url": "https://...", "enabled": true}' })
      if (b.enabled !== undefined && typeof b.enabled !== 'boolean') throw bad(ENABLED_FLAG)
      const u = parseWebhookUrl(b.url)
      await checkTarget(u, config.webhookBlockPrivate)
      const now = clock.now()
      // under the owner's lock, as a form delete: saves at once make one webhook (the first
      // creates it, the others update it), and a form deleted meanwhile is refused (1611)
      return db.k.transaction().execute(async (trx) => {
        await db.lockUser(trx, user.id)
        await ownedIn(trx, user, formId)
        const existing = await notifyStore.webhook(trx, formId)
        if (existing) {
          const patch = { url: u.href, enabled: b.enabled === false ? 0 : 1, updated_at: now }
          await trx.updateTable('form_webhooks').set(patch).where('form_id', '=', formId).execute()
          return webhookView({ ...existing, ...patch }, false)
        }
        const row = {
          form_id: formId,
          user_id: user.id,
          url: u.href,
          secret: newSecret(),
          enabled: b.enabled === false ? 0 : 1,
          created_at: now,
          updated_at: now,
        }
        await trx.insertInto('form_webhooks').values(row).execute()
        return webhookView(row, true)
      })
    },

    /** A new secret, shown once; deliveries signed from now on use it. */
    async rotateSecret(user: User, formId: string) {
      await owned(user, formId)
      const w = await notifyStore.webhook(db.k, formId)
      if (!w) throw new AppError('WEBHOOK_NOT_FOUND')
      const secret = newSecret()
      const now = clock.now()
      await db.k.updateTable('form_webhooks').set({ secret, updated_at: now }).where('form_id', '=', formId).execute()
      return webhookView({ ...w, secret, updated_at: now }, true)
    },

    async removeWebhook(user: User, formId: string) {
      await owned(user, formId)
      const r = await db.k.deleteFrom('form_webhooks').where('form_id', '=', formId).executeTakeFirst()
      if (Number(r.numDeletedRows) === 0) throw new AppError('WEBHOOK_NOT_FOUND')
    },

    async getEmail(user: User, formId: string) {
      await owned(user, formId)
      const e = await notifyStore.emailSetting(db.k, formId)
      const addresses = await notifyStore.verifiedAddresses(db.k, user.id)
      return { enabled: e ? !!e.enabled : false, mode: e?.mode ?? 'each', recipients: addresses.map((a) => a.address), smtp_configured: mailer !== null }
    },

    /** E-mail per submission ('each') or one digest per NOTIFY_DIGEST_EVERY ('digest'), to the verified addresses. */
    async setEmail(user: User, formId: string, body: unknown) {
      await owned(user, formId)
      const b = (body ?? {}) as { enabled?: unknown; mode?: unknown }
      if (typeof b.enabled !== 'boolean') throw bad(ENABLED_FLAG)
      const mode = b.mode ?? 'each'
      if (mode !== 'each' && mode !== 'digest') throw bad({ zh: 'mode 须为 "each" 或 "digest"', en: 'mode must be "each" or "digest"' })
      if (b.enabled && !mailer) throw new AppError('EMAIL_NOT_CONFIGURED')
      const row = { form_id: formId, user_id: user.id, mode, enabled: b.enabled ? 1 : 0, updated_at: clock.now() }
      // under the owner's lock, as a form delete: a form deleted meanwhile is refused (1611)
      await db.k.transaction().execute(async (trx) => {
        await db.lockUser(trx, user.id)
        await ownedIn(trx, user, formId)
        await trx
          .insertInto('form_email_settings')
          .values(row)
          .onConflict((oc) => oc.column('form_id').doUpdateSet({ mode: row.mode, enabled: row.enabled, updated_at: row.updated_at }))
          .execute()
      })
      return this.getEmail(user, formId)
    },

    async addresses(user: User) {
      const rows = await notifyStore.addresses(db.k, user.id)
      return rows.map((a) => ({ id: a.id, address: a.address, verified: a.verified_at !== null, created_at: isoMicros(Number(a.created_at)) }))
    },

    /**
     * Adds an address (or restarts its verification) and mails it a one-time verification link.
     * `linkOrigin`: where the link points, from a source the caller cannot forge (PUBLIC_URL, or
     * a loopback Host), null when there is none. The mails are throttled per address and per
     * account, so the service cannot be made to mail a stranger over and over.
     */
    async addAddress(user: User, body: unknown, linkOrigin: string | null) {
      if (!mailer) throw new AppError('EMAIL_NOT_CONFIGURED')
      if (linkOrigin === null) throw new AppError('PUBLIC_URL_REQUIRED')
      const raw = (body as { address?: unknown } | null)?.address
      if (typeof raw !== 'string' || raw.length > 254 || !ADDRESS_RE.test(raw.trim()))
        throw new AppError('NOTIFY_ADDRESS_INVALID', { params: { detail: { zh: '应为 name@domain 的形式', en: 'expected name@domain' } } })
      const address = raw.trim().toLowerCase()
      const token = randomString(40)
      const now = clock.now()
      const existing = (await notifyStore.addresses(db.k, user.id)).find((a) => a.address === address)
      if (existing?.verified_at) return { id: existing.id, address, verified: true }
      for (const [id, rules] of [
        [`notify-verify:address:${address}`, VERIFY_PER_ADDRESS],
        [`notify-verify:user:${user.id}`, VERIFY_PER_USER],
      ] as const) {
        const r = await limits.hit(id, rules, now, true)
        if (!r.allowed) {
          const wait = Math.max(1, Math.ceil((r.windows[0].resetAt - now) / 1000))
          throw new AppError('NOTIFY_MAIL_WAIT', { params: { seconds: wait }, headers: { 'Retry-After': String(wait) } })
        }
      }
      const id = existing?.id ?? newId()
      await db.k.transaction().execute(async (trx) => {
        await db.lockUser(trx, user.id)
        if (existing) {
          await trx
            .updateTable('notify_addresses')
            .set({ token_hash: sha256hex(token) })
            .where('id', '=', id)
            .execute()
          return
        }
        const n = (await notifyStore.addresses(trx, user.id)).length
        if (n >= MAX_ADDRESSES) throw new AppError('NOTIFY_ADDRESS_LIMIT', { params: { limit: MAX_ADDRESSES } })
        await trx
          .insertInto('notify_addresses')
          .values({ id, user_id: user.id, address, token_hash: sha256hex(token), verified_at: null, created_at: now })
          .execute()
      })
      const link = `${linkOrigin}/svc_api/notify/verify?token=${token}`
      try {
        await mailer.send({
          to: address,
          subject: 'Confirm this address for svc form notifications',
          text: `${user.username} asked to receive form notifications at this address.\n\nConfirm: ${link}\n\nIf this was not you, ignore this mail.`,
        })
      } catch (e) {
        throw new AppError('EMAIL_SEND_FAILED', { params: { detail: mailFailure(e) } })
      }
      return { id, address, verified: false }
    },

    /** The address a verification token is waiting for, without using the token (1426 when none is). */
    async pendingAddress(token: unknown): Promise<{ address: string; verified: false }> {
      if (typeof token !== 'string' || !/^[A-Za-z0-9]{40}$/.test(token)) throw new AppError('NOTIFY_TOKEN_INVALID')
      const r = await db.k.selectFrom('notify_addresses').select(['address']).where('token_hash', '=', sha256hex(token)).executeTakeFirst()
      if (!r) throw new AppError('NOTIFY_TOKEN_INVALID')
      return { address: r.address, verified: false }
    },

    async verifyAddress(token: unknown) {
      if (typeof token !== 'string' || !/^[A-Za-z0-9]{40}$/.test(token)) throw new AppError('NOTIFY_TOKEN_INVALID')
      const r = await db.k
        .updateTable('notify_addresses')
        .set({ verified_at: clock.now(), token_hash: null })
        .where('token_hash', '=', sha256hex(token))
        .returning(['address'])
        .executeTakeFirst()
      if (!r) throw new AppError('NOTIFY_TOKEN_INVALID')
      return { address: r.address, verified: true }
    },

    async removeAddress(user: User, id: string) {
      const r = await db.k.deleteFrom('notify_addresses').where('id', '=', id).where('user_id', '=', user.id).executeTakeFirst()
      if (Number(r.numDeletedRows) === 0) throw new AppError('RESOURCE_NOT_FOUND')
    },

    /** The form's latest deliveries (webhook and e-mail), newest first. */
    async deliveries(user: User, formId: string) {
      await owned(user, formId)
      return (await notifyStore.deliveries(db.k, formId, DELIVERY_LOG_LIMIT)).map(deliveryView)
    },

    /** Queues a failed delivery again, at once, with a fresh retry window. */
    async redeliver(user: User, deliveryId: string) {
      const r =
        deliveryId.length <= 64
          ? await db.k.selectFrom('notify_deliveries').selectAll().where('id', '=', deliveryId).where('user_id', '=', user.id).executeTakeFirst()
          : undefined
      if (!r) throw new AppError('RESOURCE_NOT_FOUND')
      if (r.status !== 'failed') throw new AppError('DELIVERY_NOT_FAILED', { params: { status: r.status } })
      const now = clock.now()
      await db.k
        .updateTable('notify_deliveries')
        .set({ status: 'pending', next_at: now, deadline_at: now + config.notifyMaxAgeMs, updated_at: now })
        .where('id', '=', r.id)
        .where('status', '=', 'failed')
        .execute()
      return deliveryView({ ...r, status: 'pending', next_at: now })
    },

    /**
     * The deliveries new submissions queue (webhook, e-mail each or digest), from the form's
     * settings read once: one per enabled webhook and one per verified address (each mode),
     * or one per address due at the end of the digest period. Spam triggers nothing. The
     * caller inserts them with the submissions, in their transaction (insertDeliveries).
     */
    async deliveriesFor(
      trx: Trx,
      form: FormRow,
      submissions: Array<{ id: string; data: Record<string, unknown>; createdAt: number; spam: boolean; subject?: string | null; files?: EventFile[] }>,
    ): Promise<DeliveryRow[]> {
      const wanted = submissions.filter((x) => !x.spam)
      if (wanted.length === 0) return []
      const [hook, email] = await Promise.all([notifyStore.webhook(trx, form.id), notifyStore.emailSetting(trx, form.id)])
      const addresses = email?.enabled && mailer ? await notifyStore.verifiedAddresses(trx, form.user_id) : []
      const now = clock.now()
      const rows: DeliveryRow[] = []
      for (const submission of wanted) {
        const event: SubmissionEvent = {
          event: 'form.submission',
          form: { id: form.id, name: form.form_name, slug: form.form_slug },
          submission: { id: submission.id, data: submission.data, created_at: isoMicros(submission.createdAt) },
        }
        // the files are named, never sent: their bytes stay with the owner's download
        if (submission.files?.length) event.submission.files = submission.files
        const payload = JSON.stringify(event)
        // a mail's payload carries the subject the post asked for; a webhook's body is the event alone
        const mailPayload = submission.subject ? JSON.stringify({ ...event, subject: submission.subject } satisfies SubmissionEvent) : payload
        const row = (kind: DeliveryRow['kind'], target: string, nextAt: number): DeliveryRow => ({
          id: newId(),
          form_id: form.id,
          user_id: form.user_id,
          submission_id: submission.id,
          kind,
          target,
          payload: kind === 'webhook' ? payload : mailPayload,
          status: 'pending',
          tries: 0,
          next_at: nextAt,
          deadline_at: nextAt + config.notifyMaxAgeMs,
          claimed_by: null,
          claimed_until: null,
          last_status: null,
          last_error: null,
          created_at: now,
          updated_at: now,
          delivered_at: null,
        })
        if (hook?.enabled) rows.push(row('webhook', hook.url, now))
        if (email?.enabled && mailer) {
          const digest = email.mode === 'digest'
          // a digest row waits for the end of its period; every row of a period goes out in one mail
          const due = digest ? Math.ceil((now + 1) / config.notifyDigestMs) * config.notifyDigestMs : now
          for (const a of addresses) rows.push(row(digest ? 'digest' : 'email', a.address, due))
        }
      }
      return rows
    },

    insertDeliveries: (trx: Trx, rows: DeliveryRow[]) => notifyStore.insertDeliveries(trx, rows),
  }
}
export type NotifyService = ReturnType<typeof createNotifyService>

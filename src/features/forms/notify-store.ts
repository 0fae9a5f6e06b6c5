import { sql, type Kysely } from 'kysely'
import type { Database } from '../../db/schema.js'
import type { Db } from '../../db/kysely.js'

declare module '../../db/schema.js' {
  interface Database {
    form_webhooks: FormWebhooksTable
    form_email_settings: FormEmailSettingsTable
    notify_addresses: NotifyAddressesTable
    notify_deliveries: NotifyDeliveriesTable
  }
}

export interface FormWebhooksTable {
  form_id: string
  user_id: string
  url: string
  secret: string
  enabled: number
  created_at: number
  updated_at: number
}

export interface FormEmailSettingsTable {
  form_id: string
  user_id: string
  /** 'each': one mail per submission; 'digest': one mail per period. */
  mode: string
  enabled: number
  updated_at: number
}

export interface NotifyAddressesTable {
  id: string
  user_id: string
  address: string
  token_hash: string | null
  verified_at: number | null
  created_at: number
}

export type DeliveryKind = 'webhook' | 'email' | 'digest'
export type DeliveryStatus = 'pending' | 'delivered' | 'failed'

export interface NotifyDeliveriesTable {
  id: string
  form_id: string
  user_id: string
  submission_id: string
  kind: DeliveryKind
  /** The webhook URL or the e-mail address. */
  target: string
  /** The submission as delivered (JSON), fixed when it was accepted. */
  payload: string
  status: DeliveryStatus
  tries: number
  next_at: number
  /** Retries stop here (NOTIFY_MAX_AGE after the submission or the redelivery). */
  deadline_at: number
  claimed_by: string | null
  claimed_until: number | null
  last_status: number | null
  last_error: string | null
  created_at: number
  updated_at: number
  delivered_at: number | null
}

export type DeliveryRow = NotifyDeliveriesTable

/** The JSON a webhook receives (and an e-mail shows) for one submission. */
/**
 * A file sent with a submission, as a notification names it (never its bytes): its id and the
 * owner's download link (absolute when the service's origin is known, else a path; both are
 * absent from events queued before notifications carried them).
 */
export interface EventFile {
  id?: string
  url?: string
  field: string
  filename: string
  content_type: string
  size: number
}

export interface SubmissionEvent {
  event: 'form.submission'
  form: { id: string; name: string; slug: string }
  submission: { id: string; data: Record<string, unknown>; created_at: string; files?: EventFile[] }
  /** E-mail deliveries only: the subject the post asked for (Formspree's `_subject`; decision 205). */
  subject?: string
}

type Q = Kysely<Database>

/**
 * Claims up to `limit` due deliveries for this worker until `until`: one statement, so two
 * instances never hold the same row. PostgreSQL skips rows another transaction is claiming
 * (FOR UPDATE SKIP LOCKED); SQLite runs the update alone (one writer at a time), and the
 * claim condition is checked again in the update itself. With `digest`, only the due digest
 * rows of that form and address are claimed (the rest of one digest mail).
 */
export async function claimDue(
  db: Db,
  worker: string,
  now: number,
  until: number,
  limit: number,
  digest?: { formId: string; target: string },
): Promise<DeliveryRow[]> {
  const due = (eb: any) =>
    eb.and([
      eb('status', '=', 'pending'),
      eb('next_at', '<=', now),
      eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now)]),
      ...(digest ? [eb('kind', '=', 'digest'), eb('form_id', '=', digest.formId), eb('target', '=', digest.target)] : []),
    ])
  if (db.engine === 'postgres') {
    return db.k.transaction().execute(async (trx) => {
      const ids = await trx.selectFrom('notify_deliveries').select('id').where(due).orderBy('next_at').limit(limit).forUpdate().skipLocked().execute()
      if (ids.length === 0) return []
      return trx
        .updateTable('notify_deliveries')
        .set({ claimed_by: worker, claimed_until: until })
        .where(
          'id',
          'in',
          ids.map((r) => r.id),
        )
        .returningAll()
        .execute()
    })
  }
  return db.k
    .updateTable('notify_deliveries')
    .set({ claimed_by: worker, claimed_until: until })
    .where('id', 'in', (eb) => eb.selectFrom('notify_deliveries').select('id').where(due).orderBy('next_at').limit(limit))
    .where(due)
    .returningAll()
    .execute()
}

export const notifyStore = {
  webhook: (q: Q, formId: string) => q.selectFrom('form_webhooks').selectAll().where('form_id', '=', formId).executeTakeFirst(),
  emailSetting: (q: Q, formId: string) => q.selectFrom('form_email_settings').selectAll().where('form_id', '=', formId).executeTakeFirst(),
  verifiedAddresses: (q: Q, userId: string) =>
    q.selectFrom('notify_addresses').selectAll().where('user_id', '=', userId).where('verified_at', 'is not', null).orderBy('created_at').execute(),
  addresses: (q: Q, userId: string) => q.selectFrom('notify_addresses').selectAll().where('user_id', '=', userId).orderBy('created_at').execute(),
  /** In statements of at most 500 rows, within both engines' limits on bound parameters. */
  insertDeliveries: async (q: Q, rows: DeliveryRow[]) => {
    for (let i = 0; i < rows.length; i += 500)
      await q
        .insertInto('notify_deliveries')
        .values(rows.slice(i, i + 500))
        .execute()
  },
  deliveries: (q: Q, formId: string, limit: number) =>
    q.selectFrom('notify_deliveries').selectAll().where('form_id', '=', formId).orderBy('created_at', 'desc').orderBy('id').limit(limit).execute(),
  /** Ends a claimed attempt: only the claim's holder may (a claim taken over after its lease ran out is not touched). */
  finish: async (q: Q, id: string, worker: string, patch: Partial<DeliveryRow>) => {
    const r = await q
      .updateTable('notify_deliveries')
      .set({ ...patch, claimed_by: null, claimed_until: null })
      .where('id', '=', id)
      .where('claimed_by', '=', worker)
      .executeTakeFirst()
    return Number(r.numUpdatedRows) > 0
  },
  /** Gives claimed rows back untried, due at once (a digest's rows beyond one mail's size). */
  release: async (q: Q, ids: string[], worker: string) => {
    if (ids.length === 0) return
    await q.updateTable('notify_deliveries').set({ claimed_by: null, claimed_until: null }).where('id', 'in', ids).where('claimed_by', '=', worker).execute()
  },
  countByStatus: async (q: Q, status: DeliveryStatus) => {
    const r = await q
      .selectFrom('notify_deliveries')
      .select(sql<number>`count(*)`.as('n'))
      .where('status', '=', status)
      .executeTakeFirstOrThrow()
    return Number(r.n)
  },
}

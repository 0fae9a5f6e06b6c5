import { sql, type Generated, type Kysely } from 'kysely'
import type { Database } from '../../db/schema.js'
import type { Db, Trx } from '../../db/kysely.js'
import { addUsage, claimUsage, usageOf } from '../../db/usage.js'

declare module '../../db/schema.js' {
  interface Database {
    forms: FormsTable
    form_submissions: FormSubmissionsTable
    form_usage: FormUsageTable
    form_slugs_held: FormSlugsHeldTable
    form_files: FormFilesTable
  }
}

/** A file sent with a submission: its bytes are the blob `digest` (a blob column, tables.ts). */
export interface FormFilesTable {
  id: string
  submission_id: string
  form_id: string
  user_id: string
  /** The field (multipart part name) it was sent in. */
  field: string
  /** The name the browser sent, cleaned for display (forms/files.ts cleanFileName). */
  filename: string
  /** The type read from the bytes, never the one the sender named. */
  content_type: string
  size: number
  digest: string
  created_at: number
}

export interface FormsTable {
  id: string
  user_id: string
  form_name: string
  form_slug: string
  slug_key: string
  fields_config: string
  allowed_origins: string
  redirect_url: string | null
  is_active: number
  honeypot_field: string | null
  min_fill_seconds: number
  created_at: number
  updated_at: number
}

export interface FormSubmissionsTable {
  id: string
  form_id: string
  user_id: string
  seq: number
  data: string
  is_read: number
  is_spam: number
  spam_reason: string | null
  user_agent: string | null
  ip_prefix: string | null
  created_at: number
}

export interface FormUsageTable {
  user_id: string
  month: string
  /** Submissions not flagged as spam: what the monthly quota holds. */
  submissions: number
  /** Spam stored in the month, at most the same limit (decision 252). */
  spam: Generated<number>
}

/**
 * A slug a deleted or renamed form left, held for the account that had it (decision 264): no
 * other account takes it, so pages that still post to it never reach a stranger. `user_id` has
 * no foreign key: a deleted account's slugs stay held.
 */
export interface FormSlugsHeldTable {
  slug_key: string
  user_id: string
  /** The account's name: an import under it (an operator's restore) takes the slug back. */
  username: string
  held_at: number
}

export type FormRow = FormsTable
export type FileRow = Pick<FormFilesTable, 'id' | 'submission_id' | 'field' | 'filename' | 'content_type' | 'size'>
export type SubmissionRow = Omit<FormSubmissionsTable, 'user_id' | 'form_id'> & { files?: FileRow[] }

/** Any query runner: the database or a transaction. */
type Q = Kysely<Database>

const FORM_COLUMNS = [
  'id',
  'user_id',
  'form_name',
  'form_slug',
  'slug_key',
  'fields_config',
  'allowed_origins',
  'redirect_url',
  'is_active',
  'honeypot_field',
  'min_fill_seconds',
  'created_at',
  'updated_at',
] as const
const SUBMISSION_COLUMNS = ['id', 'seq', 'data', 'is_read', 'is_spam', 'spam_reason', 'user_agent', 'ip_prefix', 'created_at'] as const

/** Which submissions a listing or an export covers. */
export interface SubmissionFilter {
  isRead?: boolean
  isSpam?: boolean
}

export interface FormStats {
  submission_count: number
  unread_count: number
  spam_count: number
  last_submission_at: number | null
}

const num = (v: unknown): number => Number(v ?? 0)

/** Kysely queries of the forms part; no rules here. */
export const formStore = {
  bySlugKey: (q: Q, slugKey: string) => q.selectFrom('forms').select(FORM_COLUMNS).where('slug_key', '=', slugKey).executeTakeFirst(),

  /** A form of this owner (another user's form is simply not found). */
  byId: (q: Q, userId: string, id: string) => q.selectFrom('forms').select(FORM_COLUMNS).where('id', '=', id).where('user_id', '=', userId).executeTakeFirst(),

  listByUser: (q: Q, userId: string) =>
    q.selectFrom('forms').select(FORM_COLUMNS).where('user_id', '=', userId).orderBy('created_at', 'desc').orderBy('id').execute(),

  /** The owner's form count: the usage counter, O(1). */
  countByUser: (q: Q, userId: string): Promise<number> => usageOf(q, userId, 'forms'),

  /**
   * Whether a form other than `exceptId` has the slug, and which account holds it
   * (form_slugs_held). One statement, so one snapshot under read committed: a delete moves a
   * slug from its form to its hold in one commit, and the read sees it on one side or the other.
   */
  async slugState(q: Q, slugKey: string, exceptId?: string): Promise<{ used: boolean; heldBy: { id: string; username: string } | null }> {
    const held = (c: 'user_id' | 'username') => q.selectFrom('form_slugs_held').select(c).where('slug_key', '=', slugKey)
    const r = await q
      .selectNoFrom((eb) => [
        eb
          .exists(
            eb
              .selectFrom('forms')
              .select('id')
              .where('slug_key', '=', slugKey)
              .$if(exceptId !== undefined, (w) => w.where('id', '!=', exceptId!)),
          )
          .as('used'),
        held('user_id').as('held_id'),
        held('username').as('held_name'),
      ])
      .executeTakeFirstOrThrow()
    return { used: Boolean(r.used), heldBy: r.held_id === null ? null : { id: r.held_id, username: String(r.held_name) } }
  },

  /** Whether a form other than `exceptId` has the slug, or another account holds it. */
  async slugTaken(q: Q, slugKey: string, userId: string, exceptId?: string): Promise<boolean> {
    const st = await formStore.slugState(q, slugKey, exceptId)
    return st.used || (st.heldBy !== null && st.heldBy.id !== userId)
  },

  /**
   * In a transaction that gives a form a slug, before it reads the slug: the transactions that
   * could give it to another account (a create, a rename, an import) wait for this one, so its
   * read holds until it commits (a hold only comes from a form, and a form only from them).
   */
  lockSlug: (db: Db, trx: Trx, slugKey: string) => db.lockName(trx, `form-slug.${slugKey}`),

  /** Holds a slug for its account (a delete or a rename left it); the account's own use of it again frees it (unholdSlug). */
  holdSlug: (q: Q, slugKey: string, user: { id: string; username: string }, now: number) =>
    q
      .insertInto('form_slugs_held')
      .values({ slug_key: slugKey, user_id: user.id, username: user.username, held_at: now })
      .onConflict((oc) => oc.column('slug_key').doUpdateSet({ user_id: user.id, username: user.username, held_at: now }))
      .execute(),

  unholdSlug: (q: Q, slugKey: string, userId: string) =>
    q.deleteFrom('form_slugs_held').where('slug_key', '=', slugKey).where('user_id', '=', userId).execute(),

  /** Holds every slug of an account's forms (before the account is deleted, in its transaction). */
  holdAllSlugs: (q: Q, user: { id: string; username: string }, now: number) =>
    q
      .insertInto('form_slugs_held')
      .columns(['slug_key', 'user_id', 'username', 'held_at'])
      .expression(
        q
          .selectFrom('forms')
          .select(['slug_key', 'user_id', sql.lit(user.username).as('username'), sql.lit(now).as('held_at')])
          .where('user_id', '=', user.id),
      )
      .onConflict((oc) => oc.column('slug_key').doUpdateSet({ user_id: user.id, username: user.username, held_at: now }))
      .execute(),

  /** Inserts a form if the owner's form count stays within `limit`; null when inserted, else the count that refused it. */
  async insert(trx: Trx, row: FormRow, limit: number): Promise<number | null> {
    const full = await claimUsage(trx, row.user_id, 'forms', 1, limit)
    if (full === null) await trx.insertInto('forms').values(row).execute()
    return full
  },

  update: (q: Q, id: string, patch: Partial<FormRow>) => q.updateTable('forms').set(patch).where('id', '=', id).execute(),

  /** Deletes a form and every submission of it, uncounts it and holds its slug for the owner (call in a transaction). */
  async remove(q: Q, user: { id: string; username: string }, id: string, now: number): Promise<boolean> {
    const userId = user.id
    const f = await q.selectFrom('forms').select('slug_key').where('id', '=', id).where('user_id', '=', userId).executeTakeFirst()
    if (!f) return false
    await q.deleteFrom('form_submissions').where('form_id', '=', id).where('user_id', '=', userId).execute()
    const r = await q.deleteFrom('forms').where('id', '=', id).where('user_id', '=', userId).executeTakeFirst()
    await addUsage(q, userId, 'forms', -Number(r.numDeletedRows))
    await formStore.holdSlug(q, f.slug_key, user, now)
    return Number(r.numDeletedRows) === 1
  },

  /** Counters per form of one owner. */
  async stats(q: Q, userId: string): Promise<Map<string, FormStats>> {
    const rows = await q
      .selectFrom('form_submissions')
      .select((eb) => [
        'form_id',
        eb.fn.countAll().as('total'),
        // the inbox's unread: a spam submission is counted in spam only (decision 222)
        sql<number>`sum(case when is_read = 0 and is_spam = 0 then 1 else 0 end)`.as('unread'),
        sql<number>`sum(case when is_spam = 1 then 1 else 0 end)`.as('spam'),
        eb.fn.max('created_at').as('last_at'),
      ])
      .where('user_id', '=', userId)
      .groupBy('form_id')
      .execute()
    const out = new Map<string, FormStats>()
    for (const r of rows) {
      out.set(r.form_id, {
        submission_count: num(r.total),
        unread_count: num(r.unread),
        spam_count: num(r.spam),
        last_submission_at: r.last_at === null ? null : num(r.last_at),
      })
    }
    return out
  },

  async monthUsage(q: Q, userId: string, month: string): Promise<number> {
    const r = await q.selectFrom('form_usage').select('submissions').where('user_id', '=', userId).where('month', '=', month).executeTakeFirst()
    return r ? num(r.submissions) : 0
  },

  /**
   * Under the owner's lock: counts up to `n` submissions in the owner's month while the count
   * stays at or under `limit`, by one conditional upsert (as claimUsage in db/usage.ts).
   * Returns how many were counted and the month's count after.
   */
  async claimMonth(q: Q, userId: string, month: string, limit: number, n: number): Promise<{ granted: number; used: number }> {
    const used = await this.monthUsage(q, userId, month)
    const max = Math.floor(limit)
    const granted = Math.max(0, Math.min(n, max - used))
    if (granted === 0) return { granted, used }
    const r = await q
      .insertInto('form_usage')
      .values({ user_id: userId, month, submissions: granted })
      .onConflict((oc) =>
        oc
          .columns(['user_id', 'month'])
          .doUpdateSet({ submissions: sql<number>`form_usage.submissions + ${granted}` })
          .where(sql<boolean>`form_usage.submissions + ${granted} <= ${max}`),
      )
      .returning('submissions')
      .executeTakeFirst()
    return r ? { granted, used: num(r.submissions) } : { granted: 0, used: await this.monthUsage(q, userId, month) }
  },

  /**
   * Under the owner's lock: counts up to `n` spam submissions in the owner's month while that
   * count stays at or under `limit` (the monthly quota's, counted apart from it), as claimMonth.
   * Returns how many were counted.
   */
  async claimSpam(q: Q, userId: string, month: string, limit: number, n: number): Promise<number> {
    const r = await q.selectFrom('form_usage').select('spam').where('user_id', '=', userId).where('month', '=', month).executeTakeFirst()
    const max = Math.floor(limit)
    const granted = Math.max(0, Math.min(n, max - (r ? num(r.spam) : 0)))
    if (granted === 0) return 0
    const done = await q
      .insertInto('form_usage')
      .values({ user_id: userId, month, submissions: 0, spam: granted })
      .onConflict((oc) =>
        oc
          .columns(['user_id', 'month'])
          .doUpdateSet({ spam: sql<number>`form_usage.spam + ${granted}` })
          .where(sql<boolean>`form_usage.spam + ${granted} <= ${max}`),
      )
      .returning('spam')
      .executeTakeFirst()
    return done ? granted : 0
  },

  /** Under the owner's lock: whether the form still exists and is active, and its next submission number. */
  async activeAndNextSeq(q: Q, userId: string, formId: string): Promise<{ active: boolean; seq: number } | undefined> {
    const r = await q
      .selectFrom('forms')
      .select((eb) => [
        'forms.is_active',
        eb
          .selectFrom('form_submissions')
          .select((e) => e.fn.max('seq').as('m'))
          .whereRef('form_submissions.form_id', '=', 'forms.id')
          .as('m'),
      ])
      .where('forms.id', '=', formId)
      .where('forms.user_id', '=', userId)
      .executeTakeFirst()
    return r ? { active: !!r.is_active, seq: num(r.m) + 1 } : undefined
  },

  insertSubmissions: (q: Q, rows: FormSubmissionsTable[]) =>
    rows.length === 0
      ? Promise.resolve()
      : q
          .insertInto('form_submissions')
          .values(rows)
          .execute()
          .then(() => undefined),

  async countSubmissions(q: Q, formId: string, f: SubmissionFilter): Promise<number> {
    let query = q
      .selectFrom('form_submissions')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('form_id', '=', formId)
    if (f.isRead !== undefined) query = query.where('is_read', '=', f.isRead ? 1 : 0)
    if (f.isSpam !== undefined) query = query.where('is_spam', '=', f.isSpam ? 1 : 0)
    const r = await query.executeTakeFirstOrThrow()
    return num(r.n)
  },

  /** Newest first; `beforeSeq` pages by key (exports), `offset` by position (listings). */
  pageSubmissions(q: Q, formId: string, f: SubmissionFilter, limit: number, opts: { offset?: number; beforeSeq?: number } = {}): Promise<SubmissionRow[]> {
    let query = q.selectFrom('form_submissions').select(SUBMISSION_COLUMNS).where('form_id', '=', formId)
    if (f.isRead !== undefined) query = query.where('is_read', '=', f.isRead ? 1 : 0)
    if (f.isSpam !== undefined) query = query.where('is_spam', '=', f.isSpam ? 1 : 0)
    if (opts.beforeSeq !== undefined) query = query.where('seq', '<', opts.beforeSeq)
    query = query.orderBy('seq', 'desc').limit(limit)
    if (opts.offset) query = query.offset(opts.offset)
    return query.execute()
  },

  /** The files of these submissions, in the order they were sent. */
  async filesOf(q: Q, submissionIds: string[]): Promise<FileRow[]> {
    if (submissionIds.length === 0) return []
    return q
      .selectFrom('form_files')
      .select(['id', 'submission_id', 'field', 'filename', 'content_type', 'size'])
      .where('submission_id', 'in', submissionIds)
      .orderBy('created_at')
      .orderBy('id')
      .execute()
  },

  /** Sets `files` on each row: its submission's files. */
  async withFiles<R extends SubmissionRow>(q: Q, rows: R[]): Promise<R[]> {
    const files = await formStore.filesOf(
      q,
      rows.map((r) => r.id),
    )
    for (const r of rows) r.files = files.filter((f) => f.submission_id === r.id)
    return rows
  },

  /** One of the owner's files with its blob; undefined for another account's or none. */
  fileOf: (q: Q, userId: string, id: string) =>
    q
      .selectFrom('form_files')
      .select(['id', 'filename', 'content_type', 'size', 'digest'])
      .where('id', '=', id)
      .where('user_id', '=', userId)
      .executeTakeFirst(),

  /** Bytes of the files the owner keeps (the form_file_bytes quota); read under the owner's lock. */
  async fileBytes(q: Q, userId: string): Promise<number> {
    const r = await q
      .selectFrom('form_files')
      .select((eb) => eb.fn.sum<number>('size').as('n'))
      .where('user_id', '=', userId)
      .executeTakeFirst()
    return num(r?.n)
  },

  insertFiles: (q: Q, rows: FormFilesTable[]) =>
    rows.length === 0
      ? Promise.resolve()
      : q
          .insertInto('form_files')
          .values(rows)
          .execute()
          .then(() => undefined),

  /**
   * Deletes one of the owner's submissions with its files' rows (their blobs are left to the
   * sweeper, as a deleted form's are); undefined when it is not theirs. Call in a transaction.
   */
  async removeSubmission(q: Q, userId: string, id: string): Promise<{ id: string; form_id: string } | undefined> {
    const s = await q.selectFrom('form_submissions').select(['id', 'form_id']).where('id', '=', id).where('user_id', '=', userId).executeTakeFirst()
    if (!s) return undefined
    // explicit, not left to the cascade: SQLite's needs foreign_keys on
    await q.deleteFrom('form_files').where('submission_id', '=', id).execute()
    await q.deleteFrom('form_submissions').where('id', '=', id).where('user_id', '=', userId).execute()
    return s
  },

  /** One of the owner's submissions with its form's id; undefined for another account's or none. */
  submissionOf: (q: Q, userId: string, id: string) =>
    q
      .selectFrom('form_submissions')
      .select([...SUBMISSION_COLUMNS, 'form_id'])
      .where('id', '=', id)
      .where('user_id', '=', userId)
      .executeTakeFirst(),

  /** Sets the read (and optionally spam) flag of an owner's submission; undefined when not theirs. */
  async setFlags(q: Q, userId: string, id: string, patch: { is_read?: number; is_spam?: number }) {
    const r = await q.updateTable('form_submissions').set(patch).where('id', '=', id).where('user_id', '=', userId).executeTakeFirst()
    if (Number(r.numUpdatedRows) !== 1) return undefined
    return q.selectFrom('form_submissions').select(['id', 'form_id', 'is_read', 'is_spam']).where('id', '=', id).executeTakeFirst()
  },
}

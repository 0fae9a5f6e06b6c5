import type { Db } from '../../db/kysely.js'
import { isUniqueViolation } from '../../db/kysely.js'
import type { User } from '../../auth/users.js'
import { newId, randomString } from '../../auth/tokens.js'
import { AppError } from '../../errors/app-error.js'
import type { Text } from '../../errors/text.js'
import { parsePage, pageInfo } from '../../http/pagination.js'
import type { LimitStore } from '../../limits/store.js'
import type { WindowRule } from '../../limits/tiers.js'
import { quotaOf, type QuotaName } from '../../limits/quotas.js'
import type { Config } from '../../config.js'
import type { BlobLease } from '../../storage/leases.js'
import type { Clock } from '../../util/clock.js'
import { beijingTime } from '../../util/time.js'
import { rounds } from '../../util/rounds.js'
import { bad, checkText, FIELD_NAME_RE, honeypotNames, keepsFile, parseFieldsConfig, subjectOf, validateSubmission, type FieldDef } from './fields.js'
import { ipPrefix, parseAllowedOrigins } from './origins.js'
import { ipLimitKey } from '../../http/ip-key.js'
import { windowRefusal } from '../../http/guard.js'
import { formStore, type FormRow, type SubmissionFilter, type SubmissionRow } from './store.js'
import type { NotifyService } from './notify-service.js'
import { holdStates } from '../abuse/store.js'
import type { SentFile } from './files.js'
import { sizeText } from '../../util/sizes.js'

/** Slugs given by the owner; generated ones are 10 characters of [A-Za-z0-9]. */
export const SLUG_RE = /^[A-Za-z0-9_-]{3,64}$/
export const DEFAULT_HONEYPOT = '_gotcha'
/** Largest submission body (JSON, form-encoded or multipart), refused before any parsing into the database. */
export const SUBMIT_BODY_LIMIT = 64 * 1024
/** Per client address (IPv4, or IPv6 /64) and form, on top of the API's anonymous rate limit. */
export const SUBMIT_RULES: WindowRule[] = [
  { name: 'minute', kind: 'sliding', ms: 60_000, limit: 10 },
  { name: 'hour', kind: 'sliding', ms: 3_600_000, limit: 100 },
]
const EXPORT_BATCH = 500

const notFound = () => new AppError('FORM_NOT_FOUND')

/** Calendar month in Beijing time, `YYYY-MM`: the period of the monthly submission quota. */
export const beijingMonth = (ms: number) => beijingTime(ms).slice(0, 7)

const trueOrFalse = (name: string): Text => ({ zh: `${name} 须为 true 或 false`, en: `${name} must be true or false` })

/** Query flag `true`/`1`, `false`/`0`, or absent. */
export function parseFlag(name: string, v: unknown): boolean | undefined {
  const x = Array.isArray(v) ? v[v.length - 1] : v
  if (x === undefined || x === '') return undefined
  if (x === 'true' || x === '1') return true
  if (x === 'false' || x === '0') return false
  throw bad(trueOrFalse(name))
}

export interface FormInput {
  form_name?: unknown
  form_slug?: unknown
  fields_config?: unknown
  allowed_origins?: unknown
  redirect_url?: unknown
  is_active?: unknown
  honeypot_field?: unknown
  min_fill_seconds?: unknown
}

function formName(v: unknown): string {
  if (typeof v !== 'string' || v.trim().length === 0) throw bad({ zh: '缺少 form_name（非空字符串）', en: 'form_name is required (a non-empty string)' })
  const s = v.trim()
  if (s.length > 100) throw bad({ zh: 'form_name 超过 100 个字符', en: 'form_name is longer than 100 characters' })
  checkText('form_name', s)
  return s
}

function slug(v: unknown): string {
  if (typeof v !== 'string' || !SLUG_RE.test(v))
    throw bad({ zh: 'form_slug 须为 3-64 个字符，只含 A-Z、a-z、0-9、"_" 和 "-"', en: 'form_slug must be 3-64 characters of A-Z, a-z, 0-9, "_" and "-"' })
  return v
}

/** redirect_url: an absolute http(s) URL (javascript:, data: and the like are refused), or null. */
function redirectUrl(v: unknown): string | null {
  if (v === null || v === '') return null
  if (typeof v !== 'string') throw bad({ zh: 'redirect_url 须为 http(s) URL 或 null', en: 'redirect_url must be an http(s) URL or null' })
  const s = v.trim()
  checkText('redirect_url', s)
  let u: URL
  try {
    u = new URL(s)
  } catch {
    throw bad({ zh: 'redirect_url 须为绝对的 http(s) URL', en: 'redirect_url must be an absolute http(s) URL' })
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw bad({ zh: `redirect_url 须为 http(s) URL，不允许 "${u.protocol}"`, en: `redirect_url must be an http(s) URL; "${u.protocol}" is not allowed` })
  if (s.length > 2048 || /[\s\u0000-\u001f\u007f]/.test(s))
    throw bad({
      zh: 'redirect_url 最多 2048 个字符，且不能包含空格或控制字符',
      en: 'redirect_url must be at most 2048 characters without spaces or control characters',
    })
  return s
}

function bool(name: string, v: unknown): boolean {
  if (typeof v !== 'boolean') throw bad(trueOrFalse(name))
  return v
}

function honeypot(v: unknown): string | null {
  if (v === null || v === '') return null
  if (typeof v !== 'string' || !(FIELD_NAME_RE.test(v) || /^_[\p{L}\p{N}\p{M}_.-]{1,63}$/u.test(v))) {
    throw bad({
      zh: 'honeypot_field 须为字段名（1-64 个字母、数字、"_"、"." 或 "-"）或 null',
      en: 'honeypot_field must be a field name (1-64 letters, digits, "_", "." or "-") or null',
    })
  }
  return v
}

function minFill(v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 3600)
    throw bad({ zh: 'min_fill_seconds 须为 0 到 3600 的整数', en: 'min_fill_seconds must be an integer from 0 to 3600' })
  return v
}

function checkHoneypotVsFields(hp: string | null, fields: FieldDef[]) {
  if (hp && fields.some((f) => f.name.toLowerCase() === hp.toLowerCase())) {
    throw bad({ zh: `honeypot_field "${hp}" 不能是表单自己的字段`, en: `honeypot_field "${hp}" must not be one of the form's fields` })
  }
}

/** A form as the API answers it. */
export function formView(f: FormRow, base: string) {
  return {
    id: f.id,
    form_name: f.form_name,
    form_slug: f.form_slug,
    fields_config: JSON.parse(f.fields_config) as FieldDef[],
    allowed_origins: JSON.parse(f.allowed_origins) as string[],
    redirect_url: f.redirect_url,
    is_active: !!f.is_active,
    honeypot_field: f.honeypot_field,
    min_fill_seconds: Number(f.min_fill_seconds),
    submit_url: `${base}/api/forms/submit/${f.form_slug}`,
    created_at: beijingTime(Number(f.created_at)),
    updated_at: beijingTime(Number(f.updated_at)),
  }
}
export type FormView = ReturnType<typeof formView>

/** Where the owner downloads a submission's file (`base`: the service's origin, or '' for a path). */
export const fileUrl = (base: string, id: string) => `${base}/svc_api/forms/files/${id}`

/** A submission as the API answers it; `base` makes its files' download URLs. */
export function submissionView(r: SubmissionRow, base = '') {
  return {
    id: r.id,
    data: JSON.parse(r.data) as Record<string, unknown>,
    is_read: !!r.is_read,
    is_spam: !!r.is_spam,
    spam_reason: r.spam_reason,
    user_agent: r.user_agent,
    ip_prefix: r.ip_prefix,
    created_at: beijingTime(Number(r.created_at)),
    files: (r.files ?? []).map((f) => ({
      id: f.id,
      field: f.field,
      filename: f.filename,
      content_type: f.content_type,
      size: Number(f.size),
      url: fileUrl(base, f.id),
    })),
  }
}
export type SubmissionView = ReturnType<typeof submissionView>

/** Why a submission looks automated, or null (a honeypot filled; filled in faster than allowed). */
export function spamReason(
  form: Pick<FormRow, 'honeypot_field' | 'min_fill_seconds'>,
  defs: FieldDef[],
  body: Map<string, unknown>,
  now: number,
): string | null {
  const first = (v: unknown) => (Array.isArray(v) ? v[0] : v)
  for (const name of honeypotNames(defs, form.honeypot_field)) {
    const hp = first(body.get(name))
    if (hp !== undefined && hp !== null && hp !== '' && hp !== false) return 'honeypot'
  }
  const min = Number(form.min_fill_seconds)
  if (min > 0) {
    const ts = first(body.get('_ts'))
    const n = typeof ts === 'number' ? ts : typeof ts === 'string' && /^\d{1,16}(\.\d+)?$/.test(ts.trim()) ? Number(ts) : NaN
    if (!Number.isFinite(n)) return 'no_timestamp'
    // seconds or milliseconds since the epoch
    const renderedAt = n < 1e11 ? n * 1000 : n
    if (now - renderedAt < min * 1000) return 'too_fast'
  }
  return null
}

export interface FormServiceDeps {
  db: Db
  clock: Clock
  limits: LimitStore
  /** The quotas of an account without its own limits (FORM_FILE_QUOTA_BYTES among them). */
  config: Pick<Config, 'quotaDefaults'>
  /** The notifications submissions queue, read before the owner's lock and written in their transaction. */
  notify?: Pick<NotifyService, 'deliveriesFor' | 'insertDeliveries'>
}

/**
 * A submission posted to a site page that is held (abuse handling: `state` quarantined or
 * removed) when it would be stored: nothing was stored or queued; the route answers the
 * page's 451 notice.
 */
export class PageHeld extends Error {
  constructor(readonly state: string) {
    super(`the page is held (${state})`)
  }
}

/** The rules of the forms part: management, submission, quotas. No Fastify here. */
export function createFormService({ db, clock, limits, config, notify }: FormServiceDeps) {
  const quota = (userLimits: string | Record<string, number>, name: QuotaName) => quotaOf(userLimits, name, config.quotaDefaults)
  const owned = async (user: User, id: string) => {
    const f = id.length <= 64 ? await formStore.byId(db.k, user.id, id) : undefined
    if (!f) throw notFound()
    return f
  }

  /**
   * Submissions of one form that arrive while a round of them runs go together in the next
   * (util/rounds.ts): one transaction, one take of the owner's lock, numbers and quota
   * claimed for the round at once, in arrival order. The owner's lock was held for several
   * round trips per submission, so one owner's submissions ran one lock at a time. Each
   * caller gets what it would have got alone: the rules that hold for the form (gone,
   * disabled) fail the whole round; past the monthly quota, the later submissions each get
   * 1613. Spam takes no place in the quota but one of the month's spam count, with the same
   * limit; past it, it is answered as kept and dropped, never 1613. A round holds one month (Beijing time) of at most ROUND_MAX submissions. A post to
   * a site page whose page is held by then (`hold`: its hold key) gets PageHeld and takes no
   * place, number or delivery (decision 185).
   */
  type Submission = {
    form: FormRow
    id: string
    data: Record<string, unknown>
    spam: string | null
    ua: string | null
    ip: string
    now: number
    hold: string | null
    /** The mail subject the post asked for (`_subject`), or null. */
    subject: string | null
    /** Files stored as blobs while the body was read (none for spam: decision 282), with their row ids. */
    files: Array<SentFile & { id: string }>
    /** The service's origin for links sent out (notifications), or '' when unknown: download links are then paths. */
    links: string
  }
  const ROUND_MAX = 256
  const submitRound = rounds<Submission, { id: string; spam: string | null }>(
    (round) =>
      db.k.transaction().execute(async (trx) => {
        const form = round[0].form
        // reads first: the owner's lock is held only for the writes
        const owner = await trx.selectFrom('users').select(['limits', 'disabled']).where('id', '=', form.user_id).executeTakeFirst()
        const settings = await formStore.byId(trx, form.user_id, form.id)
        if (!owner || !settings) throw notFound()
        if (!settings.is_active || owner.disabled) throw new AppError('FORM_DISABLED')
        const deliveries =
          (await notify?.deliveriesFor(
            trx,
            settings,
            round.map((x) => ({
              id: x.id,
              data: x.data,
              createdAt: x.now,
              spam: x.spam !== null,
              subject: x.subject,
              // each file with its id and the owner's download link, so a receiver can fetch it
              files: x.files.map((f) => ({
                id: f.id,
                field: f.field,
                filename: f.filename,
                content_type: f.content_type,
                size: f.size,
                url: fileUrl(x.links, f.id),
              })),
            })),
          )) ?? []
        const month = beijingMonth(round[0].now)
        const limit = quota(owner.limits, 'form_submissions_month')
        await db.lockUser(trx, form.user_id)
        // under the lock: the form still there and active (a delete or disable may have
        // committed since), and the next number of its submissions
        const current = await formStore.activeAndNextSeq(trx, form.user_id, form.id)
        if (!current) throw notFound()
        if (!current.active) throw new AppError('FORM_DISABLED')
        // under the lock, which a quarantine and a takedown take too: a page held since the
        // public host let its post through collects nothing (decision 185)
        const held = await holdStates(
          trx,
          round.flatMap((x) => (x.hold === null ? [] : [x.hold])),
        )
        const stateOf = (x: Submission) => (x.hold === null ? undefined : held.get(x.hold))
        const live = round.filter((x) => stateOf(x) === undefined)
        // spam takes no place in the monthly quota, as on Formspree and Netlify, so a bot that
        // fills the honeypot cannot use it up for the visitors; it has a count of its own with
        // the same limit, past which it is answered as kept but not stored (252)
        // the bytes of files the owner keeps stay within form_file_bytes: a submission whose
        // files would pass it is refused whole (1613), the ones before it kept
        const byteLimit = quota(owner.limits, 'form_file_bytes')
        let bytesUsed = round.some((x) => x.files.length > 0) ? await formStore.fileBytes(trx, form.user_id) : 0
        const overBytes = new Map<Submission, number>()
        for (const x of live) {
          const n = x.files.reduce((a, f) => a + f.size, 0)
          if (n === 0) continue
          if (bytesUsed + n > byteLimit) overBytes.set(x, bytesUsed)
          else bytesUsed += n
        }
        const ham = live.filter((x) => x.spam === null && !overBytes.has(x))
        const spam = live.filter((x) => x.spam !== null)
        const { granted, used } = ham.length === 0 ? { granted: 0, used: 0 } : await formStore.claimMonth(trx, form.user_id, month, limit, ham.length)
        const spamKept = spam.length === 0 ? 0 : await formStore.claimSpam(trx, form.user_id, month, limit, spam.length)
        const keptSet = new Set([...ham.slice(0, granted), ...spam.slice(0, spamKept)])
        const kept = live.filter((x) => keptSet.has(x))
        await formStore.insertSubmissions(
          trx,
          kept.map((x, i) => ({
            id: x.id,
            form_id: form.id,
            user_id: form.user_id,
            seq: current.seq + i,
            data: JSON.stringify(x.data),
            is_read: 0,
            is_spam: x.spam ? 1 : 0,
            spam_reason: x.spam,
            user_agent: x.ua,
            ip_prefix: ipPrefix(x.ip),
            created_at: x.now,
          })),
        )
        await formStore.insertFiles(
          trx,
          kept.flatMap((x) =>
            x.files.map((f) => ({
              id: f.id,
              submission_id: x.id,
              form_id: form.id,
              user_id: form.user_id,
              field: f.field,
              filename: f.filename,
              content_type: f.content_type,
              size: f.size,
              digest: f.digest,
              created_at: x.now,
            })),
          ),
        )
        // the deliveries of the submissions kept (read before the lock, for all of the round)
        const keptIds = new Set(kept.map((x) => x.id))
        await notify?.insertDeliveries(
          trx,
          deliveries.filter((d) => keptIds.has(d.submission_id)),
        )
        return round.map((x) => {
          const state = stateOf(x)
          if (state !== undefined) return new PageHeld(state)
          const before = overBytes.get(x)
          if (before !== undefined) {
            const detail = { zh: `表单文件已用 ${before} 字节，上限 ${sizeText(byteLimit).zh}`, en: `form files ${before} bytes of ${sizeText(byteLimit).en}` }
            return new AppError('FORM_QUOTA', {
              params: { detail, limit: sizeText(byteLimit) },
              extra: { details: { quota: 'form_file_bytes', used: before, limit: byteLimit } },
            })
          }
          // spam past its count: answered as stored, so the bot learns nothing
          return keptIds.has(x.id) || x.spam !== null
            ? { id: x.id, spam: x.spam }
            : new AppError('FORM_QUOTA', {
                params: {
                  detail: { zh: `本月提交 ${used}/${limit}（${month}，北京时间）`, en: `monthly submissions ${used}/${limit} (${month}, Beijing time)` },
                  limit,
                },
                extra: { details: { quota: 'form_submissions_month', used, limit, month } },
              })
        })
      }),
    // the waiting submissions of the first one's month, in order, up to ROUND_MAX
    (waiting) => {
      const month = beijingMonth(waiting[0].now)
      return waiting.flatMap((x, i) => (i < ROUND_MAX && beijingMonth(x.now) === month ? [i] : []))
    },
  )

  return {
    /** Creates a form; its place in the form count quota is taken in the inserting transaction (1613). */
    async create(user: User, input: FormInput): Promise<FormRow> {
      const name = formName(input.form_name)
      const givenSlug = input.form_slug === undefined || input.form_slug === null || input.form_slug === '' ? null : slug(input.form_slug)
      const fields = parseFieldsConfig(input.fields_config)
      const origins = parseAllowedOrigins(input.allowed_origins)
      const redirect = input.redirect_url === undefined ? null : redirectUrl(input.redirect_url)
      const active = input.is_active === undefined ? true : bool('is_active', input.is_active)
      const hp = input.honeypot_field === undefined ? DEFAULT_HONEYPOT : honeypot(input.honeypot_field)
      const fill = input.min_fill_seconds === undefined ? 0 : minFill(input.min_fill_seconds)
      checkHoneypotVsFields(hp, fields)
      if (givenSlug && (await formStore.slugTaken(db.k, givenSlug.toLowerCase(), user.id))) throw new AppError('FORM_SLUG_TAKEN')
      const limit = quota(user.limits, 'forms')
      const formQuota = (used: number) =>
        new AppError('FORM_QUOTA', {
          params: { detail: { zh: `表单 ${used}/${limit}`, en: `forms ${used}/${limit}` }, limit },
          extra: { details: { quota: 'forms', used, limit } },
        })
      // a full quota is refused after one read; the transaction takes the place for real
      const counted = await formStore.countByUser(db.k, user.id)
      if (counted >= limit) throw formQuota(counted)

      for (let attempt = 0; ; attempt++) {
        const formSlug = givenSlug ?? randomString(10)
        const now = clock.now()
        const row: FormRow = {
          id: newId(),
          user_id: user.id,
          form_name: name,
          form_slug: formSlug,
          slug_key: formSlug.toLowerCase(),
          fields_config: JSON.stringify(fields),
          allowed_origins: JSON.stringify(origins),
          redirect_url: redirect,
          is_active: active ? 1 : 0,
          honeypot_field: hp,
          min_fill_seconds: fill,
          created_at: now,
          updated_at: now,
        }
        try {
          await db.k.transaction().execute(async (trx) => {
            // a slug another account holds is refused as taken (a random one is drawn again); asked
            // in the transaction under the slug's lock, so it stays as read until the insert commits
            await formStore.lockSlug(db, trx, row.slug_key)
            if (await formStore.slugTaken(trx, row.slug_key, user.id)) throw new AppError('FORM_SLUG_TAKEN')
            const used = await formStore.insert(trx, row, limit)
            if (used !== null) throw formQuota(used)
            await formStore.unholdSlug(trx, row.slug_key, user.id)
          })
          return row
        } catch (e) {
          const taken = isUniqueViolation(e) || (e instanceof AppError && e.key === 'FORM_SLUG_TAKEN')
          if (!taken) throw e
          if (givenSlug || attempt >= 4) throw new AppError('FORM_SLUG_TAKEN')
        }
      }
    },

    /** Changes any of the creation fields; the others stay. */
    async update(user: User, id: string, input: FormInput): Promise<FormRow> {
      const f = await owned(user, id)
      const patch: Partial<FormRow> = {}
      if (input.form_name !== undefined) patch.form_name = formName(input.form_name)
      if (input.form_slug !== undefined && input.form_slug !== f.form_slug) {
        patch.form_slug = slug(input.form_slug)
        patch.slug_key = patch.form_slug.toLowerCase()
        if (await formStore.slugTaken(db.k, patch.slug_key, user.id, f.id)) throw new AppError('FORM_SLUG_TAKEN')
      }
      const fields = input.fields_config !== undefined ? parseFieldsConfig(input.fields_config) : (JSON.parse(f.fields_config) as FieldDef[])
      if (input.fields_config !== undefined) patch.fields_config = JSON.stringify(fields)
      if (input.allowed_origins !== undefined) patch.allowed_origins = JSON.stringify(parseAllowedOrigins(input.allowed_origins))
      if (input.redirect_url !== undefined) patch.redirect_url = redirectUrl(input.redirect_url)
      if (input.is_active !== undefined) patch.is_active = bool('is_active', input.is_active) ? 1 : 0
      const hp = input.honeypot_field !== undefined ? honeypot(input.honeypot_field) : f.honeypot_field
      if (input.honeypot_field !== undefined) patch.honeypot_field = hp
      if (input.min_fill_seconds !== undefined) patch.min_fill_seconds = minFill(input.min_fill_seconds)
      checkHoneypotVsFields(hp, fields)
      patch.updated_at = clock.now()
      try {
        await db.k.transaction().execute(async (trx) => {
          // asked again in the transaction, under the new slug's lock (as a create)
          if (patch.slug_key !== undefined) {
            await formStore.lockSlug(db, trx, patch.slug_key)
            if (await formStore.slugTaken(trx, patch.slug_key, user.id, f.id)) throw new AppError('FORM_SLUG_TAKEN')
          }
          await formStore.update(trx, f.id, patch)
          // a renamed form's old slug stays its owner's, as a deleted form's does (decision 264)
          if (patch.slug_key !== undefined && patch.slug_key !== f.slug_key) {
            await formStore.holdSlug(trx, f.slug_key, user, patch.updated_at!)
            await formStore.unholdSlug(trx, patch.slug_key, user.id)
          }
        })
      } catch (e) {
        if (isUniqueViolation(e)) throw new AppError('FORM_SLUG_TAKEN')
        throw e
      }
      return { ...f, ...patch }
    },

    /** The owner's forms, newest first, with counters and the quota usage. */
    async list(user: User) {
      const [forms, stats, used, fileBytes] = await Promise.all([
        formStore.listByUser(db.k, user.id),
        formStore.stats(db.k, user.id),
        formStore.monthUsage(db.k, user.id, beijingMonth(clock.now())),
        formStore.fileBytes(db.k, user.id),
      ])
      return {
        forms: forms.map((f) => ({ row: f, stats: stats.get(f.id) ?? { submission_count: 0, unread_count: 0, spam_count: 0, last_submission_at: null } })),
        quota: {
          forms: { used: forms.length, limit: quota(user.limits, 'forms') },
          submissions_month: { used, limit: quota(user.limits, 'form_submissions_month'), month: beijingMonth(clock.now()) },
          export_rows: { limit: quota(user.limits, 'form_export_rows') },
          file_bytes: { used: fileBytes, limit: quota(user.limits, 'form_file_bytes') },
        },
      }
    },

    /** One page of a form's submissions, newest first. */
    async data(user: User, id: string, query: Record<string, unknown>, base = '') {
      const f = await owned(user, id)
      const page = parsePage(query, { perPage: 20, maxPerPage: 100 })
      const filter: SubmissionFilter = { isRead: parseFlag('is_read', query.is_read), isSpam: parseFlag('is_spam', query.is_spam) }
      const total = await formStore.countSubmissions(db.k, f.id, filter)
      const rows = page.offset < total ? await formStore.pageSubmissions(db.k, f.id, filter, page.perPage, { offset: page.offset }) : []
      await formStore.withFiles(db.k, rows)
      return { form_id: f.id, ...pageInfo(page, total), submissions: rows.map((r) => submissionView(r, base)) }
    },

    /**
     * An export: the form, how many rows it will hold (newest first, at most the owner's
     * form_export_rows), and the rows read in batches so a large export never sits in memory.
     */
    async export(user: User, id: string, query: Record<string, unknown>) {
      const f = await owned(user, id)
      const format = (Array.isArray(query.format) ? query.format[query.format.length - 1] : query.format) ?? 'json'
      if (format !== 'json' && format !== 'csv') throw bad({ zh: 'format 须为 json 或 csv', en: 'format must be json or csv' })
      const filter: SubmissionFilter = { isRead: parseFlag('is_read', query.is_read), isSpam: parseFlag('is_spam', query.is_spam) }
      const cap = quota(user.limits, 'form_export_rows')
      const top = await formStore.pageSubmissions(db.k, f.id, filter, 1)
      const total = await formStore.countSubmissions(db.k, f.id, filter)
      const startSeq = top.length ? Number(top[0].seq) + 1 : 0
      async function* rows(): AsyncGenerator<SubmissionRow> {
        let left = cap
        let before = startSeq
        while (left > 0 && before > 0) {
          const batch = await formStore.withFiles(
            db.k,
            await formStore.pageSubmissions(db.k, f.id, filter, Math.min(EXPORT_BATCH, left), { beforeSeq: before }),
          )
          for (const r of batch) yield r
          if (batch.length < Math.min(EXPORT_BATCH, left)) return
          left -= batch.length
          before = Number(batch[batch.length - 1].seq)
        }
      }
      return { form: f, format: format as 'json' | 'csv', cap, total, rows }
    },

    async remove(user: User, id: string): Promise<void> {
      await owned(user, id)
      // under the owner's lock, as a submission's insert: one that found the form there commits
      // first (and goes with it), never after the form's row is gone
      const ok = await db.k.transaction().execute(async (trx) => {
        await db.lockUser(trx, user.id)
        return formStore.remove(trx, user, id, clock.now())
      })
      if (!ok) throw notFound()
    },

    /** Marks a submission read or unread (and, beyond the spec, spam or not). */
    async markRead(user: User, submissionId: string, body: unknown) {
      const b = (body ?? {}) as Record<string, unknown>
      if (typeof b !== 'object' || Array.isArray(b))
        throw bad({ zh: '请求体须为 JSON 对象 {"is_read": true|false}', en: 'the body must be a JSON object {"is_read": true|false}' })
      const patch: { is_read?: number; is_spam?: number } = {}
      if (b.is_read !== undefined) patch.is_read = bool('is_read', b.is_read) ? 1 : 0
      if (b.is_spam !== undefined) patch.is_spam = bool('is_spam', b.is_spam) ? 1 : 0
      if (b.is_read === undefined && b.is_spam === undefined) patch.is_read = 1
      const r = submissionId.length <= 64 ? await formStore.setFlags(db.k, user.id, submissionId, patch) : undefined
      if (!r) throw new AppError('RESOURCE_NOT_FOUND')
      return { id: r.id, form_id: r.form_id, is_read: !!r.is_read, is_spam: !!r.is_spam }
    },

    /**
     * Deletes one of the owner's submissions and its files (decision 295): the file
     * bytes it held leave form_file_bytes and the form's counters at once; the month's
     * submission count stays (it counts what came in). 404 / 1405 for another account's or none.
     */
    async removeSubmission(user: User, submissionId: string): Promise<{ id: string; form_id: string }> {
      const r = submissionId.length <= 64 ? await db.k.transaction().execute((trx) => formStore.removeSubmission(trx, user.id, submissionId)) : undefined
      if (!r) throw new AppError('RESOURCE_NOT_FOUND')
      return r
    },

    /** One of the owner's submissions, whole, with its form's id (MCP get_submission); 404 / 1405 for another account's or none. */
    async submission(user: User, submissionId: string, base = '') {
      const r = submissionId.length <= 64 ? await formStore.submissionOf(db.k, user.id, submissionId) : undefined
      if (!r) throw new AppError('RESOURCE_NOT_FOUND')
      await formStore.withFiles(db.k, [r])
      return { form_id: r.form_id, submission: submissionView(r, base) }
    },

    /** One of the owner's files and its blob; 404 for another account's or none. */
    async file(user: User, id: string) {
      const f = id.length <= 64 ? await formStore.fileOf(db.k, user.id, id) : undefined
      if (!f) throw new AppError('RESOURCE_NOT_FOUND')
      return f
    },

    /** The form a public submit addresses (1611 when there is none). */
    async bySlug(formSlug: string): Promise<FormRow> {
      const f = SLUG_RE.test(formSlug) ? await formStore.bySlugKey(db.k, formSlug.toLowerCase()) : undefined
      if (!f) throw notFound()
      return f
    },

    /** Counts a submission attempt per client address and form; 429 (1204 / 1203) past the limit. */
    async throttle(form: FormRow, ip: string): Promise<void> {
      const now = clock.now()
      const r = await limits.hit(`form-submit:${form.id}:${ipLimitKey(ip)}`, SUBMIT_RULES, now, true)
      if (!r.allowed) throw windowRefusal(r, 'form submissions per client address').error
    },

    /**
     * Validates and stores one submission. Spam (honeypot, too fast) is stored flagged, not
     * dropped, while the month's spam count allows. The owner's monthly quota is checked under
     * the owner's lock (1613), in the submission round of its form (submitRound); so is
     * `hold`, the hold key of the site page posted to (PageHeld when it is held). `lease`: the
     * one its files were stored under (withBlobLease), checked before the round.
     */
    async submit(
      form: FormRow,
      body: Map<string, unknown>,
      meta: { ip: string; userAgent?: string; hold?: string | null; files?: SentFile[]; lease?: BlobLease; links?: string },
    ): Promise<{ id: string; spam: string | null }> {
      const defs = JSON.parse(form.fields_config) as FieldDef[]
      const sentFiles = (meta.files ?? []).filter((f) => keepsFile(defs, form.honeypot_field, f.field))
      const data = validateSubmission(
        defs,
        form.honeypot_field,
        body,
        sentFiles.map((f) => f.field),
      )
      const now = clock.now()
      const spam = spamReason(form, defs, body, now)
      const ua = meta.userAgent && !/[\u0000]/.test(meta.userAgent) ? meta.userAgent.slice(0, 512) : null
      // spam keeps no files: a bot filling the honeypot cannot fill the owner's file quota
      const files = spam === null ? sentFiles.map((f) => ({ ...f, id: newId() })) : []
      // the files were put as the body arrived, maybe longer ago than the sweeper's grace (a
      // slow link): the request's lease kept every sweep off them, and a lapsed one refuses
      // the submission (503, sent again) rather than storing a row without its bytes
      // (decisions 297, 313)
      if (files.length > 0) meta.lease?.check()
      const links = meta.links ?? ''
      return submitRound(form.id, { form, id: newId(), data, spam, ua, ip: meta.ip, now, hold: meta.hold ?? null, subject: subjectOf(body), files, links })
    },
  }
}
export type FormService = ReturnType<typeof createFormService>

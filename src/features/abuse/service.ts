import type { Deps } from '../../deps.js'
import type { Db, Trx } from '../../db/kysely.js'
import { AppError } from '../../errors/app-error.js'
import type { Text } from '../../errors/text.js'
import { newId } from '../../auth/tokens.js'
import { createInvalidatedCache } from '../../infra/invalidated-cache.js'
import { FLUSH_ALL } from '../../infra/bus.js'
import { DIGEST_RE } from '../../storage/blob-store.js'
import { hostName, isContentOnlyHost, projectSegment, siteOf } from '../../http/site-origin.js'
import type { SiteHooks } from '../../http/site-hooks.js'
import { cleanPageExtension, decodeSegment, PAGE_NAME, projectOf } from '../sites/paths.js'
import { publishedFolder } from '../sites/folders-store.js'
import { invalidateHosting } from '../sites/invalidate.js'
import { invalidateAccount } from '../accounts/invalidate.js'
import { takedownDigests } from '../image-host/inspect.js'
import { createAdmin, type Actor } from '../admin/service.js'
import { createAbuseStore, type ReportRow } from './store.js'
import { scanPage, SCAN_MAX_BYTES } from './heuristics.js'
import type { PageRead } from '../../util/html.js'
import { CATEGORIES, type ReportStatus } from './vocabulary.js'

/** Each report status, as a refusal of an admin action words it (HOLD_STATE). */
const STATUS_WORDS: Record<ReportStatus, Text> = {
  open: { zh: '待处理', en: 'open' },
  quarantined: { zh: '已隔离', en: 'quarantined' },
  restored: { zh: '已恢复', en: 'restored' },
  taken_down: { zh: '已下架', en: 'taken_down' },
  lifted: { zh: '已解除下架', en: 'lifted' },
  dismissed: { zh: '已驳回', en: 'dismissed' },
}
/** The admin actions on a report, each as a refusal of it words it (HOLD_STATE). */
const ACTIONS = {
  quarantine: { zh: '隔离', en: 'quarantine' },
  restore: { zh: '恢复', en: 'restore' },
  takedown: { zh: '下架', en: 'take down' },
  lift: { zh: '解除下架', en: 'lift' },
  dismiss: { zh: '驳回', en: 'dismiss' },
} satisfies Record<string, Text>
type Action = keyof typeof ACTIONS

/** The path of the report link on the service and on every user's origin. */
export const REPORT_PATH = '/.well-known/svc-report'

/** The SHA-256 of zero bytes (an empty .nojekyll or .gitkeep): never put on the blocklist. */
const EMPTY_DIGEST = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'
/** Bus channels of the caches the holds concern (their owners' names). */
const HOLDS_CHANNEL = 'content-holds'
const IMAGE_CHANNEL = 'image-host'
const DATA_CHANNEL = 'hosted-data'

/** What a hold is on: a page name of a user (single file and/or folder project), an image or a data link. */
export type Target = { kind: 'site'; username: string; name: string } | { kind: 'image'; token: string } | { kind: 'data'; token: string }

/** A hold an owner is told of (the dashboard's notice). */
export type OwnerHold = Target & { state: 'quarantined' | 'removed'; category: string; created_at: number }

export const targetKey = (t: Target): string => (t.kind === 'site' ? `site:${t.username}/${t.name}` : `${t.kind}:${t.token}`)

function parseKey(key: string): Target {
  const colon = key.indexOf(':')
  const kind = key.slice(0, colon)
  const rest = key.slice(colon + 1)
  if (kind === 'site') {
    const slash = rest.indexOf('/')
    return { kind: 'site', username: rest.slice(0, slash), name: rest.slice(slash + 1) }
  }
  return { kind: kind as 'image' | 'data', token: rest }
}

/** The hold key of a public-host path (/{username}/{name}/...), or null when it names none. */
export function siteKeyOfPath(path: string): string | null {
  const a = path.indexOf('/', 1)
  if (a < 0) return null
  const b = path.indexOf('/', a + 1)
  const user = decodeSegment(path.slice(1, a))
  const name = decodeSegment(path.slice(a + 1, b < 0 ? undefined : b))
  if (user === null || name === null || name === '') return null
  // a preview ({project}@{deploy}) is held with its project; NFC, as the host resolves names,
  // so every Unicode spelling of a held project's URL names its one hold
  return `site:${user.toLowerCase()}/${projectOf(name.normalize('NFC'))}`
}

export interface ReportInput {
  url: string
  category: string
  details?: string
  contact?: string
}

/** The abuse service; one per Deps: `deps.services.get(createAbuse)` (its hold index listens on the bus). */
export function createAbuse(deps: Deps) {
  const { db, clock, config, bus, blobs } = deps
  const store = createAbuseStore(db)
  const admin = deps.services.get(createAdmin)
  // which project a verified custom domain serves: the domains feature's hook, handed over
  // by the app (useDomains); none until then (a service built without an app)
  let domainOf: SiteHooks['domain'] = () => null
  const publicHost = config.publicUrl ? hostName(new URL(config.publicUrl).host) : null

  // every hold (target -> state), small: loaded whole, dropped on every change anywhere
  const index = createInvalidatedCache<'all', Map<string, string>>({ bus, channel: HOLDS_CHANNEL, maxEntries: 1 })
  // one load at a time, shared only while no change has come since it began: a caller
  // never gets holds read before the last change it could have seen
  let loading: { ticket: number; p: Promise<Map<string, string>> } | null = null
  const loadHolds = (): Promise<Map<string, string>> => {
    const hit = index.get('all')
    if (hit) return Promise.resolve(hit)
    if (loading && index.accepts(loading.ticket)) return loading.p
    const t = index.ticket()
    const p: Promise<Map<string, string>> = store
      .holds()
      .then((rows) => {
        const m = new Map(rows.map((r) => [r.target, r.state]))
        index.set('all', m, t)
        return m
      })
      .finally(() => {
        if (loading?.p === p) loading = null
      })
    loading = { ticket: t, p }
    return p
  }

  /** Whether the target `prefix` + name is held for review (quarantined), for listings. */
  async function heldUnder(prefix: string): Promise<(name: string) => boolean> {
    const holds = await loadHolds()
    if (holds.size === 0) return () => false
    return (name) => holds.get(prefix + name) === 'quarantined'
  }

  /**
   * Resolves a reported URL to the content of this service it names, by its host first, as the
   * public host serves it: a user's, project's or deploy's origin (the path inside it); a
   * verified custom domain (its project); the service's own host (PUBLIC_URL's; without
   * PUBLIC_URL any other host, which the service cannot tell from its own): the path form and
   * the image and data links. Any other host names no content of this service (1705).
   */
  async function targetOfUrl(raw: string): Promise<{ target: Target; userId: string }> {
    let u: URL
    try {
      u = new URL(raw)
    } catch {
      throw new AppError('CONTENT_TARGET_UNKNOWN', { params: { detail: { zh: '不是网址', en: 'not a URL' } } })
    }
    const unknown = (detail: Text) => new AppError('CONTENT_TARGET_UNKNOWN', { params: { detail } })
    const path = u.pathname
    const host = hostName(u.host)
    // a user's own origin ({username}.{content domain}/{name}/...), a project's own origin
    // ({project}.{username}.{content domain}/...) or one of its deploys' ({deploy}--{project}...)
    const site = siteOf(u.host, config)
    let key: string | null
    // the path-form path of a URL that may be a single page's clean URL (/{username}/{name})
    let clean: string | null = null
    if (site !== null) {
      clean = site.project === null ? `/${site.username}${path}` : null
      key = siteKeyOfPath(site.project === null ? `/${site.username}${path}` : `/${site.username}/${projectSegment(site.project, site.deploy)}${path}`)
    } else if (isContentOnlyHost(u.host, config)) throw unknown({ zh: `${host} 不提供任何内容`, en: `${host} serves no content` })
    else {
      const domain = await domainOf(host)
      if (domain !== null) key = `site:${domain.username.toLowerCase()}/${domain.project}`
      else if (publicHost !== null && host !== publicHost)
        throw unknown({
          zh: `${host} 既不是本服务的主机（${publicHost}），也不是用户的源或已验证的自定义域名`,
          en: `${host} is not this service's host (${publicHost}), a user's origin or a verified custom domain`,
        })
      else {
        const link = /^\/(svc-img|image-host|svc-data|hosted-data)\/pub\/([A-Za-z0-9_-]{16,64})$/.exec(path)
        if (link) {
          const token = link[2]
          if (link[1] === 'svc-img' || link[1] === 'image-host') {
            const img = await store.image(db.k, token)
            if (!img) throw unknown({ zh: '没有这张图片', en: 'no such image' })
            return { target: { kind: 'image', token }, userId: img.user_id }
          }
          const f = await store.dataFile(db.k, token)
          if (!f) throw unknown({ zh: '没有这个数据链接', en: 'no such data link' })
          return { target: { kind: 'data', token }, userId: f.user_id }
        }
        // the path form (/{username}/{name}/...)
        key = siteKeyOfPath(path)
        clean = path
      }
    }
    if (!key) throw unknown({ zh: '该网址不指向任何页面、图片或数据链接', en: 'the URL names no page, image or data link' })
    const t = parseKey(key) as Extract<Target, { kind: 'site' }>
    const user = await store.userByName(t.username)
    if (!user) throw unknown({ zh: `没有用户 "${t.username}"`, en: `no user "${t.username}"` })
    const file = await store.siteFile(db.k, user.id, t.name)
    if (!file && clean !== null) {
      const page = await cleanPage(user.id, clean, t.name)
      if (page !== null) return { target: { ...t, name: page }, userId: user.id }
    }
    const folder = await store.siteFolder(db.k, user.id, t.name)
    if (!file && !folder) throw unknown({ zh: `${t.username} 没有页面 "${t.name}"`, en: `no page "${t.name}" of ${t.username}` })
    return { target: t, userId: user.id }
  }

  /**
   * The single page a clean URL names (`/{username}/about`: about.html, else about.htm), as
   * the public host serves it: no file and no published project of the name (decision 169);
   * null: not one.
   */
  async function cleanPage(userId: string, path: string, name: string): Promise<string | null> {
    const a = path.indexOf('/', 1)
    if (a < 0 || path.indexOf('/', a + 1) >= 0 || PAGE_NAME.test(name) || (await publishedFolder(db, userId, name))) return null
    const ext = await cleanPageExtension(name, (file) => store.siteFile(db.k, userId, file))
    return ext === null ? null : name + ext
  }

  /** The bytes behind a target, as evidence rows (read through `q`: a transaction or the database). */
  async function collect(t: Target, userId: string, q: Trx | Db['k'] = db.k) {
    const out: Array<{ path: string; digest: string; size: number; content_type: string }> = []
    if (t.kind === 'site') {
      const f = await store.siteFile(q, userId, t.name)
      if (f) out.push({ path: t.name, digest: f.digest, size: Number(f.size), content_type: f.content_type })
      const folder = await store.siteFolder(q, userId, t.name)
      if (folder) {
        for (const r of await store.folderFiles(q, folder.id)) out.push({ ...r, path: `${t.name}/${r.path}`, size: Number(r.size) })
        // a kept deploy is served too (a preview's `{deploy}--{name}.{user}...`, `{name}@{deploy}/`):
        // bytes only it holds are kept and blocked with the rest, each once, named as served there
        const seen = new Set(out.map((e) => e.digest))
        for (const r of await store.deployFiles(q, folder.id)) {
          if (seen.has(r.digest)) continue
          seen.add(r.digest)
          out.push({ path: `${t.name}@${r.deploy_id}/${r.path}`, digest: r.digest, size: Number(r.size), content_type: r.content_type })
        }
      }
    } else if (t.kind === 'image') {
      const img = await store.image(q, t.token)
      if (img) out.push({ path: img.file_name || t.token, digest: img.digest, size: Number(img.size), content_type: img.content_type })
    } else {
      const f = await store.dataFile(q, t.token)
      if (f)
        for (const v of await store.dataVersions(q, f.id))
          out.push({ path: `v${v.version}`, digest: v.digest, size: Number(v.size), content_type: v.content_type })
    }
    return out
  }

  /** The digests a takedown of these image bytes blocks (image-host's takedownDigests); unreadable bytes: their own. */
  async function imageFormDigests(ev: Array<{ digest: string; content_type: string }>): Promise<string[]> {
    const out: string[] = []
    for (const e of new Map(ev.map((x) => [x.digest, x])).values()) {
      const bytes = e.content_type === 'image/svg+xml' ? null : await blobs.read(e.digest).catch(() => null)
      out.push(...(bytes ? await takedownDigests(bytes) : [e.digest]))
    }
    return out
  }

  /** Drops every cache that may hold the target's answers, on every instance. */
  async function invalidate(t: Target): Promise<void> {
    await index.publish('all')
    if (t.kind === 'site') await invalidateHosting(bus, t.username)
    else await bus.publish(t.kind === 'image' ? IMAGE_CHANNEL : DATA_CHANNEL, t.token)
  }

  /**
   * Drops every cached image and data link, on every instance: the blocklist changed, and any
   * link may serve the digests it gained or lost (a copy under another token, another file's
   * version); their lookups ask the blocklist again (abuse/public.ts takenDown).
   */
  async function blocklistChanged(): Promise<void> {
    await bus.publish(IMAGE_CHANNEL, FLUSH_ALL)
    await bus.publish(DATA_CHANNEL, FLUSH_ALL)
  }

  const needReport = async (id: string): Promise<ReportRow> => {
    const r = await store.report(id)
    if (!r) throw new AppError('REPORT_NOT_FOUND')
    return r
  }

  /** The report's target, resolved from its URL the first time an admin acts on it. */
  async function targetOfReport(r: ReportRow): Promise<{ target: Target; userId: string }> {
    if (r.target && r.target_user_id) return { target: parseKey(r.target), userId: r.target_user_id }
    const found = await targetOfUrl(r.url)
    await store.setReport(db.k, r.id, { target: targetKey(found.target), target_user_id: found.userId, updated_at: clock.now() })
    return found
  }

  /** The refusal of `action` on a report in `status`, both named in each language. */
  const notIn = (status: string, action: Action) => {
    const did = ACTIONS[action]
    const state = STATUS_WORDS[status as ReportStatus] ?? { zh: status, en: status }
    return new AppError('HOLD_STATE', { params: { detail: { zh: `不能${did.zh}${state.zh}的举报`, en: `cannot ${did.en} a report that is ${state.en}` } } })
  }
  const expect = (r: ReportRow, states: string[], action: Action) => {
    if (!states.includes(r.status)) throw notIn(r.status, action)
  }
  /**
   * The report's move to `status`, made only from `states` (expect's, asked again as one step
   * with the change): of two admins acting on one report at once, one moves it and the other
   * gets 409 / 1706 and changes nothing (its transaction rolls back).
   */
  async function move(q: Trx | Db['k'], r: ReportRow, states: string[], action: Action, status: string, actor: Actor, now: number): Promise<void> {
    if (await store.moveReport(q, r.id, states, { status, updated_at: now, resolved_by: actor.name })) return
    throw notIn((await store.report(r.id, q))?.status ?? r.status, action)
  }

  const service = {
    store,
    targetOfUrl,

    /** Hands over the custom domains' lookup (the domains feature's SiteHooks), for targetOfUrl. */
    useDomains(hooks: Pick<SiteHooks, 'domain'>): void {
      domainOf = (host) => hooks.domain(host)
    },

    /** The abuse contact setting (e-mail as mailto:, or a URL; empty when unset). */
    abuseContact: async (): Promise<string> => (await admin.settings()).abuse_contact,

    /**
     * What an owner is told of their content an admin acted on (the dashboard): each page or
     * project, image or data link held for review or taken down, with the report's category.
     */
    async ownerHolds(userId: string): Promise<OwnerHold[]> {
      return (await store.ownerHolds(userId, 50)).map((r) => ({
        ...parseKey(r.target),
        state: r.state === 'removed' ? 'removed' : 'quarantined',
        category: r.category ?? 'other',
        created_at: Number(r.created_at),
      }))
    },

    /** Sync look-up for hot paths: the holds, or undefined when they must be loaded first. */
    holdsNow: (): ReadonlyMap<string, string> | undefined => index.get('all'),
    holds: loadHolds,

    /**
     * For owners' listings: whether a user's page or project (`name`, its first path
     * segment) is held for review. Taken-down content is gone from the listings already.
     */
    async quarantinedSites(username: string): Promise<(name: string) => boolean> {
      return heldUnder(`site:${username.toLowerCase()}/`)
    },

    /** For owners' listings of images and data links: whether a public token is held for review. */
    async quarantinedLinks(kind: 'image' | 'data'): Promise<(token: string) => boolean> {
      return heldUnder(`${kind}:`)
    },

    /** A public report (no login; the routes rate-limit it). */
    async report(input: ReportInput, ip: string, source: 'public' | 'admin' = 'public'): Promise<{ id: string }> {
      const bad = (zh: string, en: string) => new AppError('REPORT_INVALID', { params: { detail: { zh, en } } })
      const notAbsolute = () => bad('url 须为绝对 http(s) 网址', 'url must be an absolute http(s) URL')
      const url = typeof input.url === 'string' ? input.url.trim() : ''
      if (url.length === 0 || url.length > 2000) throw bad('url 须为 1-2000 个字符', 'url must be 1-2000 characters')
      let parsed: URL
      try {
        parsed = new URL(url)
      } catch {
        throw notAbsolute()
      }
      if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') throw notAbsolute()
      if (!(CATEGORIES as readonly string[]).includes(input.category))
        throw bad(`category 须为以下值之一：${CATEGORIES.join('、')}`, `category must be one of ${CATEGORIES.join(', ')}`)
      const details = input.details ?? ''
      const contact = (input.contact ?? '').trim()
      if (typeof details !== 'string' || details.length > 5000) throw bad('details 最多 5000 个字符', 'details must be at most 5000 characters')
      if (contact.length > 300) throw bad('contact 最多 300 个字符', 'contact must be at most 300 characters')
      if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(details + contact + url)) throw bad('不允许包含控制字符', 'control characters are not allowed')
      const now = clock.now()
      // the target is filled in when it can be found now; an admin can still act later
      const found = await targetOfUrl(url).catch(() => null)
      const id = newId()
      await store.insertReport({
        id,
        url,
        category: input.category,
        details,
        contact,
        source,
        reporter_ip: ip,
        status: 'open',
        target: found ? targetKey(found.target) : null,
        target_user_id: found?.userId ?? null,
        created_at: now,
        updated_at: now,
        resolved_by: null,
      })
      return { id }
    },

    /** A case an admin opens on content they found: the URL must name content of this service; audited. */
    async openCase(actor: Actor, input: ReportInput) {
      const { target } = await targetOfUrl(input.url)
      const { id } = await service.report(input, actor.ip, 'admin')
      await store.setReport(db.k, id, { resolved_by: actor.name })
      await admin.audit(actor, 'abuse.open', targetKey(target), { report: id, category: input.category })
      return service.detail(id)
    },

    async reports(status: string | undefined, limit: number, offset: number) {
      const { total, rows } = await store.reports(status, limit, offset)
      const holds = await loadHolds()
      return {
        total,
        reports: rows.map((r) => ({
          ...r,
          created_at: Number(r.created_at),
          updated_at: Number(r.updated_at),
          hold: r.target ? (holds.get(r.target) ?? null) : null,
        })),
      }
    },

    async detail(id: string) {
      const r = await needReport(id)
      const evidence = await store.evidence(id)
      return {
        ...r,
        created_at: Number(r.created_at),
        updated_at: Number(r.updated_at),
        evidence: evidence.map((e) => ({ ...e, size: Number(e.size), created_at: Number(e.created_at) })),
      }
    },

    /** Quarantine: 451 everywhere the content is served, bytes kept as evidence. */
    async quarantine(actor: Actor, id: string) {
      const r = await needReport(id)
      expect(r, ['open', 'restored'], 'quarantine')
      const { target, userId } = await targetOfReport(r)
      const key = targetKey(target)
      const now = clock.now()
      // under the owner's lock, as a takedown: a deploy or upload of theirs running meanwhile
      // commits first and its bytes are the evidence, or runs after the hold is in place
      const ev = await db.k.transaction().execute(async (trx) => {
        await db.lockUser(trx, userId)
        await move(trx, r, ['open', 'restored'], 'quarantine', 'quarantined', actor, now)
        const ev = await collect(target, userId, trx)
        await store.addEvidence(
          trx,
          ev.map((e) => ({ ...e, report_id: id, created_at: now })),
        )
        await store.putHold(trx, { target: key, state: 'quarantined', user_id: userId, report_id: id, created_at: now, created_by: actor.name })
        return ev
      })
      await invalidate(target)
      await admin.audit(actor, 'abuse.quarantine', key, { report: id, evidence: ev.length })
      return service.detail(id)
    },

    /** Restore: the quarantined content is served again; its evidence is released. */
    async restore(actor: Actor, id: string) {
      const r = await needReport(id)
      expect(r, ['quarantined'], 'restore')
      const { target } = await targetOfReport(r)
      const key = targetKey(target)
      await db.k.transaction().execute(async (trx) => {
        await move(trx, r, ['quarantined'], 'restore', 'restored', actor, clock.now())
        const h = await store.hold(trx, key)
        if (h?.report_id === id) await store.dropHold(trx, key)
        await store.dropEvidence(trx, id)
      })
      await invalidate(target)
      await admin.audit(actor, 'abuse.restore', key, { report: id })
      return service.detail(id)
    },

    /**
     * Takedown: the content's rows go, its bytes stay as evidence, their digests go on the
     * upload blocklist, and the URL keeps answering 451. Optionally disables the account.
     */
    async takedown(actor: Actor, id: string, opts: { disableAccount?: boolean } = {}) {
      const r = await needReport(id)
      expect(r, ['open', 'quarantined', 'restored'], 'takedown')
      const { target, userId } = await targetOfReport(r)
      const key = targetKey(target)
      const now = clock.now()
      // The owner's deploys and uploads write under the user's lock; the takedown takes it too
      // and reads what it removes under it. A write running meanwhile either commits first (its
      // rows are removed, kept and blocked with the rest) or waits, then finds its digests
      // blocked (refuseBlocked). An image's metadata-free form is worked out from its bytes
      // before the transaction (and again should the image have been replaced meanwhile).
      let ev: Awaited<ReturnType<typeof collect>> = []
      let kept = 0
      for (let attempt = 0; ; attempt++) {
        const seen = await collect(target, userId)
        // an image's bytes are blocked in both forms, with and without their metadata (also the
        // evidence a quarantine kept, should the image be gone since)
        const alsoBlocked = target.kind === 'image' ? await imageFormDigests([...seen, ...(await store.evidence(id))]) : []
        const done = await db.k.transaction().execute(async (trx) => {
          await db.lockUser(trx, userId)
          ev = await collect(target, userId, trx)
          const same = ev.length === seen.length && ev.every((e, i) => e.digest === seen[i].digest)
          if (target.kind === 'image' && !same && attempt < 3) return false
          await move(trx, r, ['open', 'quarantined', 'restored'], 'takedown', 'taken_down', actor, now)
          await store.addEvidence(
            trx,
            ev.map((e) => ({ ...e, report_id: id, created_at: now })),
          )
          const all = await store.evidence(id, trx)
          // a site's files may carry bytes other accounts published before it did (a copied
          // stylesheet, a library, a copy of someone's page): blocking those would refuse their
          // owners' next publish (1701), so the abusive upload could not poison the blocklist.
          // Zero bytes are no content at all. Images and data links block all (decision 87).
          const spared =
            target.kind === 'site' ? await store.heldEarlierByOthers(trx, userId, await store.siteDigestTimes(trx, userId, target.name)) : new Set<string>()
          spared.add(EMPTY_DIGEST)
          kept = all.filter((e) => spared.has(e.digest)).length
          await store.block(
            trx,
            [...all.map((e) => e.digest), ...alsoBlocked].filter((d) => !spared.has(d)),
            id,
            now,
            actor.name,
          )
          if (target.kind === 'site') {
            const f = await store.siteFile(trx, userId, target.name)
            if (f) await store.deleteFile(trx, userId, f.id)
            const folder = await store.siteFolder(trx, userId, target.name)
            if (folder) await store.deleteFolder(trx, folder.id)
          } else if (target.kind === 'image') {
            const img = await store.image(trx, target.token)
            if (img) await store.deleteImage(trx, img.user_id, img.id)
          } else {
            const f = await store.dataFile(trx, target.token)
            if (f) await store.deleteData(trx, f.user_id, f.id)
          }
          await store.putHold(trx, { target: key, state: 'removed', user_id: userId, report_id: id, created_at: now, created_by: actor.name })
          return true
        })
        if (done) break
      }
      await invalidate(target)
      await blocklistChanged()
      let disabled = false
      if (opts.disableAccount) {
        const u = await store.userById(userId)
        if (u && u.username !== actor.name) {
          await deps.users.update(u.username, { disabled: true })
          disabled = true
          // everything the account serves goes offline at once, whatever the report named (an
          // image or data link too), as the admin console's disable does
          await invalidateAccount(bus, u.username)
        }
      }
      await admin.audit(actor, 'abuse.takedown', key, { report: id, evidence: ev.length, not_blocked: kept, disabled_account: disabled })
      return service.detail(id)
    },

    /** Lift a takedown: the digests may be uploaded again and the URL no longer answers 451. */
    async lift(actor: Actor, id: string) {
      const r = await needReport(id)
      expect(r, ['taken_down'], 'lift')
      const { target } = await targetOfReport(r)
      const key = targetKey(target)
      await db.k.transaction().execute(async (trx) => {
        await move(trx, r, ['taken_down'], 'lift', 'lifted', actor, clock.now())
        await store.unblock(trx, id)
        const h = await store.hold(trx, key)
        if (h?.report_id === id) await store.dropHold(trx, key)
        await store.dropEvidence(trx, id)
      })
      await invalidate(target)
      await blocklistChanged()
      await admin.audit(actor, 'abuse.lift', key, { report: id })
      return service.detail(id)
    },

    async dismiss(actor: Actor, id: string) {
      const r = await needReport(id)
      expect(r, ['open'], 'dismiss')
      await move(db.k, r, ['open'], 'dismiss', 'dismissed', actor, clock.now())
      await admin.audit(actor, 'abuse.dismiss', r.target ?? r.url, { report: id })
      return service.detail(id)
    },

    /** Bytes of one evidence item, for the admin (served inert by the routes). */
    async evidenceBytes(id: string, digest: string) {
      if (!DIGEST_RE.test(digest)) throw new AppError('RESOURCE_NOT_FOUND')
      const e = (await store.evidence(id)).find((x) => x.digest === digest)
      if (!e) throw new AppError('RESOURCE_NOT_FOUND')
      return { row: e, bytes: await blobs.read(digest) }
    },

    /**
     * Runs the heuristics on freshly stored HTML pages of a user; a hit opens a report (one
     * open heuristic report per target), its URL on `origin` (the origin the upload's answer
     * names its pages on) and its details the reasons alone (`source` says where they come
     * from). Never throws: a scan must not fail an upload.
     */
    async scanPages(
      user: { id: string; username: string },
      pages: Array<{ name: string; path: string; digest: string; size: number; contentType: string }>,
      opts: {
        origin?: string
        log?: { warn(o: unknown, m: string): void }
        /**
         * Given each page read, for the caller's own checks (it must not throw): the bytes are
         * read once, and `read` tokenizes them once for the caller and the heuristics together.
         */
        each?: (page: { name: string; path: string }, read: () => PageRead) => void
      } = {},
    ) {
      try {
        const html = pages.filter((p) => p.contentType.startsWith('text/html')).slice(0, 50)
        if (html.length === 0) return
        const settings = await admin.settings()
        const brands = settings.brand_words
          .split(',')
          .map((w) => w.trim())
          .filter(Boolean)
        const ownHosts = [
          config.publicUrl ? new URL(config.publicUrl).hostname : null,
          config.contentDomain,
          config.contentDomain ? `${user.username}.${config.contentDomain}` : null,
        ]
          .filter((h): h is string => !!h)
          .map((h) => h.toLowerCase())
        for (const p of html) {
          const bytes = p.size > SCAN_MAX_BYTES ? (await blobs.read(p.digest)).subarray(0, SCAN_MAX_BYTES) : await blobs.read(p.digest)
          const text = bytes.toString('utf8')
          // one pass of the tokenizer for the caller's checks and the heuristics (scanPage)
          const each = opts.each
          const reasons = scanPage(text, { ownHosts, brands }, each && ((read) => each(p, read)))
          if (reasons.length === 0) continue
          const key = `site:${user.username}/${p.name}`
          if (await store.openHeuristic(key)) continue
          const now = clock.now()
          const path = p.path ? `${encodeURIComponent(p.name)}/${p.path.split('/').map(encodeURIComponent).join('/')}` : encodeURIComponent(p.name)
          await store.insertReport({
            id: newId(),
            url: `${opts.origin ?? config.publicUrl ?? 'https://localhost'}/${user.username}/${path}`,
            category: 'phishing',
            details: reasons.join('; '),
            contact: '',
            source: 'heuristic',
            reporter_ip: '',
            status: 'open',
            target: key,
            target_user_id: user.id,
            created_at: now,
            updated_at: now,
            resolved_by: null,
          })
        }
      } catch (err) {
        opts.log?.warn({ err }, 'upload heuristics failed')
      }
    },
  }
  return service
}
export type Abuse = ReturnType<typeof createAbuse>

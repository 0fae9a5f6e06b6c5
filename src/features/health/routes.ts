import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { sql } from 'kysely'
import type { Deps } from '../../deps.js'
import { mayReadMetrics } from '../../observability/http.js'
import { metrics } from '../../observability/metrics.js'

/** How long one dependency may take to answer a readiness check. */
export const READY_TIMEOUT_MS = 2000

type Check = () => Promise<unknown>

/** Runs a check against a deadline: 'ok', 'timeout', or 'error: <message>'. */
async function run(check: Check, timeoutMs: number): Promise<string> {
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs)
  })
  try {
    return await Promise.race([
      check().then(
        () => 'ok',
        (e: Error) => `error: ${e?.message ?? String(e)}`.slice(0, 200),
      ),
      deadline,
    ])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * The dependencies a probe asks, by the name it reports, and whether one that fails makes the
 * instance unready. The database and a local blob folder do: without them the instance serves
 * next to nothing, and when only its own path to them is broken the balancer sends the traffic
 * to the others. Redis and an S3 bucket do not (decisions 147, 237): each is shared, so down it
 * is down for every instance alike, and each still serves the public host and links (from
 * its blob disk cache, with S3) while writes fail fast; failing readiness everywhere would
 * take the whole service offline instead.
 */
function checks(deps: Deps): Record<string, { check: Check; required: boolean }> {
  const out: Record<string, { check: Check; required: boolean }> = {
    database: { check: () => sql`select 1`.execute(deps.db.k), required: true },
    storage: { check: () => deps.blobs.ping(), required: deps.blobs.kind !== 's3' },
  }
  if (deps.config.redisUrl) {
    out.redis = {
      check: async () => {
        await deps.limits.ping?.()
        await deps.bus.ping?.()
      },
      required: false,
    }
  }
  return out
}

/** The overall state: `unavailable` when a required check failed, `degraded` when only a reported one did. */
export type ReadyStatus = 'ok' | 'degraded' | 'unavailable'

export interface Readiness {
  status: ReadyStatus
  /** Each check's full result ('ok', 'timeout' or 'error: <message>'), and whether its failure makes the instance unready. */
  results: Array<{ name: string; result: string; required: boolean }>
}

/**
 * Asks every dependency of `checks` at once, each within `timeoutMs`. The one implementation
 * of readiness: /readyz and the admin console's health page both call it.
 */
export async function readiness(deps: Deps, timeoutMs = READY_TIMEOUT_MS): Promise<Readiness> {
  const list = checks(deps)
  const results = await Promise.all(Object.entries(list).map(async ([name, c]) => ({ name, result: await run(c.check, timeoutMs), required: c.required })))
  const ok = results.every((c) => c.result === 'ok' || !c.required)
  const status: ReadyStatus = !ok ? 'unavailable' : results.every((c) => c.result === 'ok') ? 'ok' : 'degraded'
  return { status, results }
}

/** What an answer shows of a result: the failure's message only to those who may read /metrics. */
const shown = (result: string, detailed: boolean) => (detailed || !result.startsWith('error: ') ? result : 'error')

/**
 * GET /livez: the process answers (no dependency is asked). GET /readyz, and /healthz as
 * before: 200 when every required dependency answers within READY_TIMEOUT_MS (`degraded`
 * when one that is only reported does not), else 503; each check is named in the body and
 * `svc_dependency_up`. Neither is cached, rate limited or authenticated. A failure's message
 * (a path of the data dir, a database host) is shown only to whoever may read /metrics; it
 * goes to the log each time a check's result changes.
 */
export function healthRoutes(app: FastifyInstance, deps: Deps, timeoutMs = READY_TIMEOUT_MS): void {
  const noStore = { 'cache-control': 'no-store' }
  const last = new Map<string, string>()
  app.get('/livez', { schema: { hide: true }, logLevel: 'warn' }, async (_req, reply) => reply.headers(noStore).send({ status: 'ok' }))
  const ready = async (req: FastifyRequest, reply: FastifyReply) => {
    const { status, results } = await readiness(deps, timeoutMs)
    for (const { name, result } of results) {
      metrics.dependencyUp.set({ dependency: name }, result === 'ok' ? 1 : 0)
      const before = last.get(name) ?? 'ok'
      last.set(name, result)
      if (result === before) continue
      if (result === 'ok') app.log.info({ check: name }, 'readiness: ok again')
      else app.log.warn({ check: name, result }, 'readiness: check failed')
    }
    const detailed = mayReadMetrics(req, deps.config)
    const report = Object.fromEntries(results.map(({ name, result }) => [name, shown(result, detailed)]))
    return reply
      .code(status === 'unavailable' ? 503 : 200)
      .headers(noStore)
      .send({ status, checks: report })
  }
  app.get('/readyz', { schema: { hide: true }, logLevel: 'warn' }, ready)
  app.get('/healthz', { schema: { hide: true }, logLevel: 'warn' }, ready)
}

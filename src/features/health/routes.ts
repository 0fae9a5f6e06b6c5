import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import type { Deps } from '../../deps.js'

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

/** The dependencies a ready instance needs, by the name a failure reports. */
function checks(deps: Deps): Record<string, Check> {
  const out: Record<string, Check> = {
    database: () => sql`select 1`.execute(deps.db.k),
    storage: () => deps.blobs.ping(),
  }
  if (deps.config.redisUrl) {
    out.redis = async () => {
      await deps.limits.ping?.()
      await deps.bus.ping?.()
    }
  }
  return out
}

/**
 * GET /livez: the process answers (no dependency is asked). GET /readyz, and /healthz as
 * before: every dependency answers within READY_TIMEOUT_MS, else 503 naming the ones that
 * did not. Neither is cached, rate limited or authenticated.
 */
export function healthRoutes(app: FastifyInstance, deps: Deps, timeoutMs = READY_TIMEOUT_MS): void {
  const noStore = { 'cache-control': 'no-store' }
  app.get('/livez', { schema: { hide: true }, logLevel: 'warn' }, async (_req, reply) => reply.headers(noStore).send({ status: 'ok' }))
  const ready = async (_req: unknown, reply: import('fastify').FastifyReply) => {
    const list = checks(deps)
    const results = await Promise.all(Object.entries(list).map(async ([name, c]) => [name, await run(c, timeoutMs)] as const))
    const report = Object.fromEntries(results)
    const ok = results.every(([, r]) => r === 'ok')
    return reply
      .code(ok ? 200 : 503)
      .headers(noStore)
      .send({ status: ok ? 'ok' : 'unavailable', checks: report })
  }
  app.get('/readyz', { schema: { hide: true }, logLevel: 'warn' }, ready)
  app.get('/healthz', { schema: { hide: true }, logLevel: 'warn' }, ready)
}

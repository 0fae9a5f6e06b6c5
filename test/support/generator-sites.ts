import { before, after } from 'node:test'
import assert from 'node:assert/strict'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Page, Response } from 'playwright-core'
import { startServer, type TestServer } from './server.js'
import type { Engine } from '../../src/db/kysely.js'
import { HIGH_LIMITS } from './hosting.js'
import { openBrowser, type BrowserLease } from './browser.js'
import { runCli } from '../cli/run.js'

/** A generator's cut-down build: test/fixtures/ssg/NAME. */
export const ssgFixture = (name: string): string => fileURLToPath(new URL(`../fixtures/ssg/${name}`, import.meta.url))

/** The statuses a browser got on its way to `res`, along redirects, the first one first. */
export async function statusChain(res: Response): Promise<number[]> {
  const chain = [res.status()]
  for (let r = res.request().redirectedFrom(); r; r = r.redirectedFrom()) chain.unshift((await r.response())?.status() ?? 0)
  return chain
}

/** What deployedFixtures sets up; its fields are filled in by the suite's before hook. */
export interface DeployedFixtures {
  s: TestServer
  browser: BrowserLease
  username: string
  /** The plain-HTTP port, where users' and projects' origins answer. */
  port: string
  /** What `svc deploy` printed, by project. */
  out: Map<string, string>
}

/**
 * Hooks of the calling suite: a server on `engine`, Chromium, one user, and each fixture
 * (folder under test/fixtures/ssg, project name) deployed with the real `svc deploy`.
 */
export function deployedFixtures(engine: Engine, fixtures: ReadonlyArray<readonly [dir: string, project: string]>): DeployedFixtures {
  const site = { out: new Map<string, string>() } as DeployedFixtures
  before(async () => {
    site.s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
    site.browser = await openBrowser()
    const user = await site.s.user()
    site.username = user.username
    site.port = new URL(site.s.httpUrl).port
    const env = { SVC_URL: site.s.url, SVC_API_KEY: user.key, SVC_INSECURE: '1', SVC_CONFIG: path.join(site.s.dataDir, 'no-config.json') }
    for (const [dir, project] of fixtures) {
      const r = await runCli(['deploy', ssgFixture(dir), '--project', project], { env })
      assert.equal(r.code, 0, r.stderr)
      site.out.set(project, r.stdout)
    }
  })
  after(async () => {
    await site.browser?.close()
    await site.s?.close()
  })
  return site
}

/** `svc deploy` printed `url/` as the site's address (the first URL it names). */
export const assertLive = (out: string | undefined, url: string): void =>
  assert.match(out ?? '', new RegExp(`is live: ${url.replace(/[.]/g, '\\.')}/\n`), `deploy printed ${url}/ first`)

/** Status and Content-Type of each path, fetched by the page. */
export const fetchedTypes = (page: Page, paths: string[]): Promise<string[]> =>
  page.evaluate(async (ps) => {
    const out: string[] = []
    for (const p of ps) {
      const r = await fetch(p)
      out.push(`${r.status} ${r.headers.get('content-type')} ${p}`)
    }
    return out
  }, paths)

/** Marks the page's window, for `sameWindow`. */
export const markWindow = (page: Page): Promise<unknown> => page.evaluate(() => ((window as unknown as { stayed: boolean }).stayed = true))
/** The page is still the window `markWindow` marked: no document was loaded since (client navigation). */
export const sameWindow = (page: Page): Promise<boolean> => page.evaluate(() => (window as unknown as { stayed?: boolean }).stayed === true)

/**
 * Runs `step` (a click, back or forward), waits until `shown(arg)` holds in the page (a page
 * function: `arg` carries the values it compares), and checks that no document was loaded on
 * the way: the generator's client router showed it.
 */
export async function clientNav(page: Page, step: () => Promise<unknown>, shown: (arg: string[]) => boolean, arg: string[], label: string): Promise<void> {
  await markWindow(page)
  await step()
  await page.waitForFunction(shown, arg, { timeout: 15_000 })
  assert.equal(await sameWindow(page), true, `${label}: no document was loaded`)
}

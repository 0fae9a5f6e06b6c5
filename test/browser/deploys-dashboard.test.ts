import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { BrowserContext, Page } from 'playwright-core'
import { startServer, type TestServer } from '../support/server.js'
import { batchUpload, HIGH_LIMITS } from '../support/hosting.js'
import { logInPage, openContext } from '../support/browser.js'
import { deploySite, postArchive } from '../support/deploys.js'

/** The dashboard's deploy list of a folder project, with its rollback and promote buttons, in Chromium. */
describe('deploys in the dashboard (Chromium)', () => {
  let s: TestServer
  let ctx: BrowserContext
  let page: Page
  let tmp: string
  const problems: string[] = []
  let u: Awaited<ReturnType<TestServer['user']>>

  before(async () => {
    s = await startServer({ env: { RATE_LIMITS: HIGH_LIMITS } })
    u = await s.user()
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-deploys-web-'))
    ctx = await openContext({
      locale: 'en-US',
      // a zone that is neither UTC nor Beijing: times must be shown in it, whatever form the API gives
      timezoneId: 'America/New_York',
      viewport: { width: 1200, height: 900 },
    })
    page = ctx.pages()[0] ?? (await ctx.newPage())
    page.setDefaultTimeout(15_000)
    page.on('console', (m) => {
      if (m.type() === 'error' && /Content Security Policy|TrustedHTML|Trusted Type|Refused to/i.test(m.text())) problems.push(m.text())
    })
    page.on('pageerror', (e) => problems.push(String(e)))
  })
  after(async () => {
    await ctx?.close().catch(() => {})
    await s?.close()
    fs.rmSync(tmp, { recursive: true, force: true })
  })

  it('lists the deploys, rolls back and promotes with the buttons', async () => {
    const one = await deploySite(s, u.key, 'blog', { 'index.html': '<h1>one</h1>' }, { message: 'first <b id=inj>post</b>' })
    const two = await deploySite(s, u.key, 'blog', { 'index.html': '<h1>two</h1>' })
    const three = await deploySite(s, u.key, 'blog', { 'index.html': '<h1>three</h1>' }, { preview: true })
    const [id1, id2, id3] = [one, two, three].map((d) => d.res.json.deploy.id as string)
    const live = async () => (await s.get(`/${u.username}/blog/`)).text

    await logInPage(page, s.url, u)
    await page.goto(`${s.url}/dashboard/folders`)
    await page.locator('#projects-table').getByRole('button', { name: 'blog' }).click()
    const rows = page.locator('#deploys-table tbody tr')
    await rows.nth(2).waitFor()
    assert.equal(await rows.count(), 3)
    // newest first: the preview, the live one, the first (its message shown as text)
    assert.match((await rows.nth(0).textContent()) ?? '', new RegExp(`${id3}.*preview`))
    assert.match((await rows.nth(1).textContent()) ?? '', new RegExp(`${id2}.*live`))
    assert.match((await rows.nth(2).textContent()) ?? '', /first <b id=inj>post<\/b>/)
    assert.equal(await page.locator('#inj').count(), 0)
    assert.equal(await rows.nth(1).getByRole('button').count(), 0, 'no button on the live deploy')

    await rows.nth(2).getByRole('button', { name: 'Roll back to this' }).click()
    await page.locator('#folders-status', { hasText: `Deploy ${id1} is live.` }).waitFor()
    assert.equal(await live(), '<h1>one</h1>')
    await rows.nth(2).getByText('live').waitFor()

    await rows.nth(0).getByRole('button', { name: 'Promote' }).click()
    await page.locator('#folders-status', { hasText: `Deploy ${id3} is live.` }).waitFor()
    assert.equal(await live(), '<h1>three</h1>')
    await rows.nth(0).getByText('live').waitFor()
    // the View link opens the deploy's own URL
    const href = await rows.nth(1).getByRole('link', { name: 'View' }).getAttribute('href')
    assert.ok(href?.endsWith(`/${u.username}/blog@${id2}/`), String(href))
    assert.equal((await s.get(new URL(href!).pathname)).text, '<h1>two</h1>')
    // Download saves the deploy as the archive that deploys it again
    const link = rows.nth(1).getByRole('link', { name: 'Download' })
    const [download] = await Promise.all([page.waitForEvent('download'), link.click()])
    assert.equal(download.suggestedFilename(), `blog-${id2}.tar.gz`)
    const saved = path.join(tmp, 'download.tar.gz')
    await download.saveAs(saved)
    assert.equal((await postArchive(s, u.key, 'copied', fs.readFileSync(saved), true)).status, 201)
    assert.equal((await s.get(`/${u.username}/copied/`)).text, '<h1>two</h1>')
    // and "Open at its own origin" opens it at the root of {deploy}--{project}.{user}.localhost
    const root = await rows.nth(1).getByRole('link', { name: 'Open at its own origin' }).getAttribute('href')
    assert.equal(root, `http://${id2}--blog.${u.username}.localhost:${new URL(s.httpUrl).port}/`)
    const atRoot = await page.context().newPage()
    await atRoot.goto(root)
    assert.equal(await atRoot.locator('h1').textContent(), 'two')
    await atRoot.close()
    // a file written through the file API to the live project makes a partial deploy (decision 159)
    assert.equal((await batchUpload(s, { key: u.key }, 'blog', [{ filename: 'extra.txt', data: 'x' }], true)).status, 200)
    await page.reload()
    await page.locator('#projects-table').getByRole('button', { name: 'blog' }).click()
    await rows.nth(3).waitFor()
    assert.match((await rows.nth(0).textContent()) ?? '', /live · partial \(file writes\)/)
    assert.doesNotMatch((await rows.nth(1).textContent()) ?? '', /partial/)
    await page.screenshot({ path: path.join(tmp, 'deploys.png') })
    assert.deepEqual(problems, [])
  })

  it('refuses a name that is not one of the projects at its field, with no project panel', async () => {
    await page.goto(`${s.url}/dashboard/folders`)
    await page.locator('#projects-table').getByRole('button', { name: 'blog' }).click()
    await page.locator('#deploys-table tbody tr').first().waitFor()
    const asked: string[] = []
    const onRequest = (r: { url(): string }) => {
      if (r.url().includes('/api/folders/no-such-project/')) asked.push(new URL(r.url()).pathname)
    }
    page.on('request', onRequest)
    const field = page.getByLabel('Open a project by name')
    await field.fill('no-such-project')
    await field.press('Enter')
    await page.locator('#open-name-error').waitFor()
    assert.equal(await page.locator('#open-name-error').textContent(), 'You have no project named "no-such-project".')
    assert.equal(await field.getAttribute('aria-invalid'), 'true')
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'open-name')
    // the panel (blog's, or one for the missing name with Publish and "No deploys yet.") is gone
    assert.equal(await page.locator('#project').isHidden(), true)
    assert.equal(await page.getByRole('button', { name: 'Publish', exact: true }).count(), 0)
    // one question (its files), not its deploys too
    page.off('request', onRequest)
    assert.deepEqual(asked, ['/api/folders/no-such-project/files'])
    // the reason stands below the row, not between the field and its button
    const [input, line] = await Promise.all([field.boundingBox(), page.locator('#open-name-error').boundingBox()])
    assert.ok(input && line && line.y >= input.y + input.height, `${JSON.stringify(input)} ${JSON.stringify(line)}`)
    // typing takes the mark away; an existing name opens its panel
    await field.fill('blog')
    assert.equal(await page.locator('#open-name-error').count(), 0)
    await field.press('Enter')
    await page.locator('#project-name', { hasText: 'blog' }).waitFor()
    await page.locator('#project').waitFor()
    assert.deepEqual(problems, [])
  })

  it('deletes a project only once its name is typed again, and takes it offline', async () => {
    await deploySite(s, u.key, 'doomed', { 'index.html': '<h1>doomed</h1>' })
    const { res } = await deploySite(s, u.key, 'doomed', { 'index.html': '<h1>next</h1>' }, { preview: true })
    const preview = `/${u.username}/doomed@${res.json.deploy.id}/`
    await page.goto(`${s.url}/dashboard/folders`)
    await page.locator('#projects-table').getByRole('button', { name: 'doomed' }).click()
    await page.locator('#deploys-table tbody tr').nth(1).waitFor()
    const asked: string[] = []
    const answer = (text: string | null) => {
      page.once('dialog', (d) => {
        asked.push(d.message())
        void (text === null ? d.dismiss() : d.accept(text))
      })
    }
    const status = () => page.locator('#folders-status').textContent()
    // cancelled, then a wrong name: nothing is deleted
    answer(null)
    await page.getByRole('button', { name: 'Delete project' }).click()
    answer('doome')
    await page.getByRole('button', { name: 'Delete project' }).click()
    await page.waitForFunction(() => /Not deleted/.test(document.querySelector('#folders-status')?.textContent ?? ''))
    assert.equal(await status(), 'Not deleted: the name typed was not doomed.')
    assert.equal((await s.get(`/${u.username}/doomed/`)).status, 200)
    assert.match(asked[0], /Delete the project doomed .*Type its name to confirm/)
    // the name: gone, with its preview, from the site and the list
    answer('doomed')
    await page.getByRole('button', { name: 'Delete project' }).click()
    // the status line held "Not deleted: ..." a moment ago: wait for the new line itself
    await page.waitForFunction(() => /^Project doomed deleted/.test(document.querySelector('#folders-status')?.textContent ?? ''))
    assert.equal(await status(), 'Project doomed deleted.')
    assert.equal(await page.locator('#project').isHidden(), true)
    await page.locator('#projects-table').getByRole('button', { name: 'blog' }).waitFor()
    // the list is drawn again after the status line: wait for that drawing, not just any list
    await page.locator('#projects-table').getByRole('button', { name: 'doomed' }).waitFor({ state: 'detached', timeout: 10_000 })
    assert.equal(await page.locator('#projects-table').getByRole('button', { name: 'doomed' }).count(), 0)
    assert.equal((await s.get(`/${u.username}/doomed/`)).status, 404)
    assert.equal((await s.get(preview)).status, 404)
    assert.deepEqual(problems, [])
  })

  it("shows every time the API gives in the browser's own zone, in one format", async () => {
    // one instant (2026-12-02 00:30:21 UTC) in each form the API uses
    const shown = await page.evaluate(() => {
      const time = (window as unknown as { SVC: { time: (v: unknown) => string } }).SVC.time
      return [time('2026-12-02 08:30:21'), time('2026-12-02T08:30:21.123456+08:00'), time('2026-12-02T00:30:21Z'), time(1796171421), time(1796171421000)]
    })
    assert.equal(new Set(shown).size, 1, shown.join(' | '))
    // New York is 5 hours behind UTC in December
    assert.match(shown[0], /12\/1\/2026.*7:30:21/)
  })
})

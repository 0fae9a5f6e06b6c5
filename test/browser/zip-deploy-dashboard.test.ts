import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { BrowserContext, Page } from 'playwright-core'
import { startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS } from '../support/hosting.js'
import { logInPage, openContext } from '../support/browser.js'
import { zipOf } from '../support/zips.js'

/** Netlify Drop in the dashboard: a zip chosen or dropped in the folder projects page is deployed whole. */
describe('zip deploys in the dashboard (Chromium)', () => {
  let s: TestServer
  let ctx: BrowserContext
  let page: Page
  const problems: string[] = []
  let u: Awaited<ReturnType<TestServer['user']>>

  before(async () => {
    s = await startServer({ env: { RATE_LIMITS: HIGH_LIMITS } })
    u = await s.user()
    ctx = await openContext({ locale: 'en-US', viewport: { width: 1200, height: 900 } })
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
  })

  it('deploys a chosen zip of a folder, then a dropped one as a preview; the site shows it', async () => {
    const css = 'h1 { color: rgb(0, 128, 0) }'
    const zip = zipOf([
      { name: 'drop-site/', data: '' },
      { name: 'drop-site/index.html', data: '<!doctype html><link rel="stylesheet" href="s.css"><h1>dropped site</h1>' },
      { name: 'drop-site/s.css', data: css },
    ])
    await logInPage(page, s.url, u)
    await page.goto(`${s.url}/dashboard/folders`)
    await page.locator('#zip-input').setInputFiles({ name: 'drop-site.zip', mimeType: 'application/zip', buffer: zip })
    assert.equal(await page.locator('#zip-name').inputValue(), 'drop-site')
    await page.getByRole('button', { name: 'Deploy zip' }).click()
    await page.locator('#folders-status', { hasText: 'Deployed drop-site (files: 2).' }).waitFor()
    // the project opens with its deploy listed (made from the dashboard)
    await page.locator('#deploys-table tbody tr', { hasText: 'dashboard' }).waitFor()

    // a second zip dropped on the zone, deployed as a preview: the live site stays as it was
    const next = zipOf([{ name: 'index.html', data: '<!doctype html><h1>next version</h1>' }])
    await page.evaluate(
      ([bytes]) => {
        const dt = new DataTransfer()
        dt.items.add(new File([new Uint8Array(bytes)], 'drop-site.zip', { type: 'application/zip' }))
        document.getElementById('zip-drop')!.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }))
      },
      [[...next]],
    )
    await page.locator('#zip-preview').check()
    await page.getByRole('button', { name: 'Deploy zip' }).click()
    await page.locator('#folders-status', { hasText: 'Preview of drop-site deployed (files: 1).' }).waitFor()

    // a visitor's browser sees the first zip's site, styled by its own stylesheet
    const site = await ctx.newPage()
    await site.goto(`${s.url}/${u.username}/drop-site/`)
    assert.equal(await site.locator('h1').textContent(), 'dropped site')
    assert.equal(await site.locator('h1').evaluate((h) => getComputedStyle(h).color), 'rgb(0, 128, 0)')
    const deploys = (await s.get('/api/folders/drop-site/deploys', { key: u.key })).json.deploys
    assert.deepEqual(
      deploys.map((d: { source: string; is_preview: boolean }) => [d.source, d.is_preview]),
      [
        ['dashboard', true],
        ['dashboard', false],
      ],
    )
    await site.goto(`${s.url}/${u.username}/drop-site@${deploys[0].id}/`)
    assert.equal(await site.locator('h1').textContent(), 'next version')
    await site.close()
    assert.deepEqual(problems, [])
  })

  it('takes a folder dropped on the folder form as the picker takes one', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-zip-drop-'))
    try {
      const root = path.join(dir, 'dropped-folder')
      fs.mkdirSync(path.join(root, 'sub'), { recursive: true })
      fs.writeFileSync(path.join(root, 'index.html'), '<!doctype html><h1>a dropped folder</h1>')
      fs.writeFileSync(path.join(root, 'sub', 'a.txt'), 'below')
      fs.writeFileSync(path.join(root, '.env'), 'SECRET=1')
      await page.goto(`${s.url}/dashboard/folders`)
      // a real drop of a folder from the system, as Chromium takes one (DevTools' drag events)
      const box = (await page.locator('#folder-form').boundingBox())!
      const at = { x: box.x + box.width / 2, y: box.y + box.height / 2 }
      const cdp = await ctx.newCDPSession(page)
      const data = { items: [], files: [root], dragOperationsMask: 1 }
      for (const type of ['dragEnter', 'dragOver', 'drop'] as const) await cdp.send('Input.dispatchDragEvent', { type, ...at, data })
      await page.locator('#folders-status', { hasText: 'Folder dropped-folder ready (files: 3).' }).waitFor()
      assert.equal(await page.locator('#folder-name').inputValue(), 'dropped-folder')
      await page.getByRole('button', { name: 'Upload folder' }).click()
      await page.locator('#folders-status', { hasText: '2 uploaded, 0 failed' }).waitFor()
      const files = (await s.get('/api/folders/dropped-folder/files', { key: u.key })).json.files.map((f: { path: string }) => f.path).sort()
      assert.deepEqual(files, ['index.html', 'sub/a.txt'])
      await cdp.detach()
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
    assert.deepEqual(problems, [])
  })
  it("shows the server's warnings of the pages a folder upload or a zip deploy put up, a line each", async () => {
    const form = (id: string) => `<!doctype html><form id="${id}" method="post" action="https://formspree.io/f/x"><input type="file" name="cv"></form>`
    const warning = (p: string, id: string) =>
      `${p}: the form id="${id}" has a file input (name="cv") but no enctype="multipart/form-data": a browser sends only the file's name, not the file. Add enctype="multipart/form-data" to the <form>`
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-warn-'))
    try {
      const root = path.join(dir, 'warned')
      fs.mkdirSync(path.join(root, 'jobs'), { recursive: true })
      fs.writeFileSync(path.join(root, 'index.html'), form('home'))
      fs.writeFileSync(path.join(root, 'jobs', 'apply.html'), form('apply'))
      await page.goto(`${s.url}/dashboard/folders`)
      await page.getByLabel('Folder to upload (sub-folders are kept)').setInputFiles(root)
      await page.getByRole('button', { name: 'Upload folder' }).click()
      const status = page.getByRole('status').filter({ hasText: '2 uploaded, 0 failed' })
      await status.waitFor()
      assert.deepEqual(await status.locator('.warning').allTextContents(), [
        'Uploaded all the same, but 2 problem(s) to fix:',
        warning('index.html', 'home'),
        warning('jobs/apply.html', 'apply'),
      ])
      // each on its own line
      const tops = await status.locator('.warning').evaluateAll((els) => els.map((e) => e.getBoundingClientRect().top))
      assert.ok(tops[0] < tops[1] && tops[1] < tops[2], String(tops))
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
    const zip = zipOf([{ name: 'index.html', data: form('zipped') }])
    await page.locator('#zip-input').setInputFiles({ name: 'warned-zip.zip', mimeType: 'application/zip', buffer: zip })
    await page.getByRole('button', { name: 'Deploy zip' }).click()
    const done = page.locator('#folders-status', { hasText: 'Deployed warned-zip (files: 1).' })
    await done.waitFor()
    assert.deepEqual(await done.locator('.warning').allTextContents(), ['Uploaded all the same, but 1 problem(s) to fix:', warning('index.html', 'zipped')])
    assert.deepEqual(problems, [])
  })
})

import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import type { BrowserContext, Page } from 'playwright-core'
import { ENGINES, multipart, startServer, type TestServer } from '../support/server.js'
import { until } from '../support/webhooks.js'
import { HIGH_LIMITS } from '../support/hosting.js'
import { type BrowserLease, openBrowser, sessionCookiesFor, watchErrors } from '../support/browser.js'

// The forms page as an owner uses it, in Chromium (decision 203): spam kept apart from the
// inbox, one submission deleted (decision 295), and the form markup the page offers,
// pasted into a page and sent by a visitor.
const engine = ENGINES[0]

describe(`dashboard: a form's submissions and its markup in Chromium [${engine}]`, () => {
  let s: TestServer
  let browser: BrowserLease
  let owner: Awaited<ReturnType<TestServer['user']>>

  const session = async (): Promise<BrowserContext> => {
    const cookie = await s.login(owner.username, owner.password)
    const ctx = await browser.newContext({ ignoreHTTPSErrors: true, locale: 'en-US' })
    await ctx.addCookies(sessionCookiesFor(cookie, s.url))
    return ctx
  }
  /** The submissions table's body rows, as their cells' text. */
  const rows = (page: Page) =>
    page.$$eval('#subs-table tbody tr', (trs) => trs.map((tr) => Array.from(tr.querySelectorAll('td')).map((td) => (td.textContent ?? '').trim())))
  const openSubmissions = async (page: Page, name: string) => {
    await page.goto(`${s.url}/dashboard/forms`)
    // the row's button is named after its form
    await page
      .locator('#forms-table tr', { hasText: name })
      .getByRole('button', { name: `Submissions ${name}`, exact: true })
      .click()
    await page.waitForSelector('#subs:not([hidden])')
  }

  before(async () => {
    s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
    owner = await s.user()
    browser = await openBrowser()
  })
  after(async () => {
    await browser?.close()
    await s?.close()
  })

  it('lists spam apart from the inbox, says why it is spam, and moves a submission between them', async () => {
    const form = (await s.post('/svc_api/forms/create', { key: owner.key, json: { form_name: 'Spam box' } })).json.data as { id: string; form_slug: string }
    for (const json of [{ name: 'Real person' }, { name: 'Bot', _gotcha: 'http://spam.example' }]) {
      assert.equal((await s.post(`/api/forms/submit/${form.form_slug}`, { json })).status, 200)
    }
    const ctx = await session()
    const page = await ctx.newPage()
    const problems = watchErrors(page)
    try {
      await openSubmissions(page, 'Spam box')
      // the inbox: the person only
      await page.waitForFunction(() => document.querySelector('#subs-table tbody')?.textContent?.includes('Real person'))
      assert.deepEqual(
        (await rows(page)).map((r) => r[1]),
        ['Real person'],
        'the honeypot catch is not in the inbox',
      )
      // the list counts the spam apart
      const heads = await page.$$eval('#forms-table thead th', (ths) => ths.map((th) => (th.textContent ?? '').trim()))
      const cells = await page.locator('#forms-table tbody tr', { hasText: 'Spam box' }).locator('td').allTextContents()
      assert.equal(cells[heads.indexOf('Submissions')], '2')
      assert.equal(cells[heads.indexOf('Spam')], '1')

      await page.selectOption('#subs-filter', 'spam')
      await page.waitForFunction(() => document.querySelector('#subs-table tbody')?.textContent?.includes('Bot'))
      const spam = await rows(page)
      assert.equal(spam.length, 1)
      assert.equal(spam[0][1], 'Bot')
      assert.ok(
        spam[0].some((c) => c === 'honeypot'),
        `the reason is shown: ${JSON.stringify(spam)}`,
      )
      // a false positive goes back to the inbox
      await page.getByRole('button', { name: 'Not spam' }).click()
      await page.waitForFunction(() => document.querySelector('#subs-table tbody')?.textContent?.includes('No submissions.'))
      await page.selectOption('#subs-filter', '')
      await page.waitForFunction(() => document.querySelector('#subs-table tbody')?.textContent?.includes('Bot'))
      assert.deepEqual((await rows(page)).map((r) => r[1]).sort(), ['Bot', 'Real person'])
      // and a submission of the inbox can be flagged
      await page.locator('#subs-table tbody tr', { hasText: 'Real person' }).getByRole('button', { name: 'Spam' }).click()
      await page.waitForFunction(() => !document.querySelector('#subs-table tbody')?.textContent?.includes('Real person'))
      const stored = (await s.get(`/svc_api/forms/data/${form.id}?is_spam=true`, { key: owner.key })).json.data.submissions
      assert.deepEqual(
        stored.map((x: any) => x.data.name),
        ['Real person'],
      )
      assert.deepEqual(problems, [])
    } finally {
      await ctx.close()
    }
  })

  it('deletes one submission with its file once the owner confirms; a dismissed delete keeps it', async () => {
    const form = (await s.post('/svc_api/forms/create', { key: owner.key, json: { form_name: 'Prune box' } })).json.data as { id: string; form_slug: string }
    assert.equal((await s.post(`/api/forms/submit/${form.form_slug}`, { json: { name: 'Stays' } })).status, 200)
    const mp = multipart([
      { name: 'name', data: 'Goes' },
      { name: 'cv', filename: 'cv.txt', data: 'my cv' },
    ])
    assert.equal((await s.post(`/api/forms/submit/${form.form_slug}`, { body: mp.body, headers: { 'content-type': mp.contentType } })).status, 200)
    const names = async () =>
      (await s.get(`/svc_api/forms/data/${form.id}`, { key: owner.key })).json.data.submissions.map((x: { data: { name: string } }) => x.data.name)
    const ctx = await session()
    const page = await ctx.newPage()
    const problems = watchErrors(page)
    const asked: string[] = []
    const answer = (accept: boolean) =>
      page.once('dialog', (d) => {
        asked.push(d.message())
        void (accept ? d.accept() : d.dismiss())
      })
    try {
      await openSubmissions(page, 'Prune box')
      await page.waitForFunction(() => document.querySelector('#subs-table tbody')?.textContent?.includes('Goes'))
      // the row's button names the submission by its time
      const button = page.locator('#subs-table tbody tr', { hasText: 'Goes' }).getByRole('button', { name: /^Delete the submission received / })
      // dismissed: nothing goes
      answer(false)
      await button.click()
      await until(() => asked.length === 1)
      assert.match(asked[0], /^Delete the submission received .+ and its 1 file\(s\)\? This cannot be undone\.$/)
      assert.deepEqual((await names()).sort(), ['Goes', 'Stays'])
      // confirmed: the submission and its file go, the list and the counters follow
      answer(true)
      await button.click()
      await page.waitForFunction(() => !document.querySelector('#subs-table tbody')?.textContent?.includes('Goes'))
      assert.equal(asked.length, 2)
      assert.deepEqual(
        (await rows(page)).map((r) => r[1]),
        ['Stays'],
      )
      const heads = await page.$$eval('#forms-table thead th', (ths) => ths.map((th) => (th.textContent ?? '').trim()))
      const count = page.locator('#forms-table tbody tr', { hasText: 'Prune box' }).locator('td').nth(heads.indexOf('Submissions'))
      await count.filter({ hasText: /^1$/ }).waitFor()
      assert.deepEqual(await names(), ['Stays'])
      assert.equal((await s.get('/svc_api/forms/list', { key: owner.key })).json.data.quota.file_bytes.used, 0)
      assert.deepEqual(problems, [])
    } finally {
      await ctx.close()
    }
  })

  it("shows a multi-line value's lines as the visitor wrote them", async () => {
    const form = (await s.post('/svc_api/forms/create', { key: owner.key, json: { form_name: 'Lines' } })).json.data as { form_slug: string }
    const message = 'Hello,\r\nsecond line\n\n  indented after a blank line'
    assert.equal((await s.post(`/api/forms/submit/${form.form_slug}`, { json: { name: 'Lena', message } })).status, 200)
    const ctx = await session()
    const page = await ctx.newPage()
    const problems = watchErrors(page)
    try {
      await openSubmissions(page, 'Lines')
      const cell = page.locator('#subs-table tbody td', { hasText: 'second line' })
      await cell.waitFor()
      // innerText is the text as rendered: a cell that collapses white space runs the lines together
      assert.equal(await cell.innerText(), 'Hello,\nsecond line\n\n  indented after a blank line')
      assert.deepEqual(problems, [])
    } finally {
      await ctx.close()
    }
  })

  it('builds a form with every field the API takes: names in any script, a multiple-choice checkbox', async () => {
    const ctx = await session()
    const page = await ctx.newPage()
    const problems = watchErrors(page)
    try {
      await page.goto(`${s.url}/dashboard/forms`)
      await page.fill('#form-name', 'Builder 表单')
      const row = (i: number) => page.locator('#field-rows > li').nth(i)
      await row(0).locator('.f-name').fill('姓名')
      await page.click('#field-add')
      await row(1).locator('.f-name').fill('first.name')
      await page.click('#field-add')
      await row(2).locator('.f-name').fill('topics')
      await row(2).locator('.f-type').selectOption('checkbox')
      await row(2).locator('.f-options').fill('news, offers')
      await page.click('#field-add')
      await row(3).locator('.f-name').fill('agree')
      await row(3).locator('.f-type').selectOption('checkbox')
      await page.getByRole('button', { name: 'Create form' }).click()
      await page.locator('#forms-table tbody tr', { hasText: 'Builder 表单' }).waitFor({ timeout: 5000 })
      assert.deepEqual(problems, [])
    } finally {
      await ctx.close()
    }
    const forms = (await s.get('/svc_api/forms/list', { key: owner.key })).json.data.forms as Array<{ form_name: string; fields_config: unknown }>
    assert.deepEqual(forms.find((f) => f.form_name === 'Builder 表单')?.fields_config, [
      { name: '姓名', label: null, type: 'text', required: true },
      { name: 'first.name', label: null, type: 'text', required: false },
      { name: 'topics', label: null, type: 'checkbox', required: false, options: ['news', 'offers'] },
      { name: 'agree', label: null, type: 'checkbox', required: false },
    ])
  })

  it("holds the form's name, id and field names to the API's rules before sending, and states the rules", async () => {
    const ctx = await session()
    const page = await ctx.newPage()
    const problems = watchErrors(page)
    const sent: string[] = []
    page.on('request', (r) => {
      if (r.method() === 'POST' && new URL(r.url()).pathname === '/svc_api/forms/create') sent.push(r.url())
    })
    /** The accessible description of a control: the texts of its aria-describedby ids. */
    const description = (sel: string) =>
      page.locator(sel).evaluate((e) =>
        (e.getAttribute('aria-describedby') ?? '')
          .split(' ')
          .filter(Boolean)
          .map((x) => document.getElementById(x)?.textContent ?? '')
          .join(' '),
      )
    const valid = (sel: string) => page.locator(sel).evaluate((e) => (e as HTMLInputElement).checkValidity())
    try {
      await page.goto(`${s.url}/dashboard/forms`)
      await page.locator('#field-rows .f-name').first().waitFor()
      // the name: at most the API's 100 characters
      assert.equal(await page.locator('#form-name').evaluate((e) => (e as HTMLInputElement).maxLength), 100)
      // the id: 3-64 of A-Z a-z 0-9 _ -, said under the field
      const slug = page.locator('#form-slug')
      for (const [v, ok] of [
        ['ab', false],
        ['a b', false],
        ['abc', true],
        ['my_form-1', true],
      ] as const) {
        await slug.fill(v)
        assert.equal(await valid('#form-slug'), ok, v)
      }
      assert.equal(await description('#form-slug'), '3-64 characters: a-z, A-Z, 0-9, _ and -.')
      // a field's name: its rule is its description (and the browser's bubble names it)
      const name = page.locator('#field-rows .f-name').first()
      await name.fill('bad name!')
      assert.equal(await valid('#field-rows .f-name'), false)
      const rule = 'Field names: a letter or digit (any script) first, then letters, digits, _ . and -; at most 64 characters.'
      assert.equal(await description('#field-rows .f-name'), rule)
      assert.equal(await name.getAttribute('title'), rule)
      // a second row's name is described the same way
      await page.click('#field-add')
      assert.equal(await description('#field-rows > li:nth-child(2) .f-name'), rule)
      // nothing went to the server while a field broke a rule
      await page.fill('#form-name', 'Rules')
      await slug.fill('ab')
      await page.getByRole('button', { name: 'Create form' }).click()
      assert.deepEqual(sent, [])
      assert.deepEqual(problems, [])
    } finally {
      await ctx.close()
    }
  })

  it('offers markup that a visitor can send as it is, a multiple-choice checkbox and odd labels included', async () => {
    const fields = [
      { name: 'name', label: 'Name & "nick"', required: true },
      { name: 'email', type: 'email', label: 'E-mail <work>' },
      { name: 'topics', type: 'checkbox', label: 'Topics', options: ['news', 'a<b', 'R&D'] },
      { name: 'plan', type: 'select', label: 'Plan', options: ['free', 'pro "plus"'] },
      { name: 'agree', type: 'checkbox', label: 'I agree' },
      { name: 'message', type: 'textarea' },
    ]
    const form = (await s.post('/svc_api/forms/create', { key: owner.key, json: { form_name: 'Markup', fields_config: fields } })).json.data as { id: string }
    const ctx = await session()
    const page = await ctx.newPage()
    try {
      await openSubmissions(page, 'Markup')
      const markup = (await page.textContent('#subs-embed')) ?? ''
      assert.ok(markup.startsWith('<form '), markup)
      // the markup on a page of its own (a blank one: the dashboard's CSP takes no markup), sent by a visitor
      const site = await ctx.newPage()
      await site.setContent(`<!doctype html><meta charset="utf-8"><body>${markup}</body>`)
      await site.getByLabel('Name & "nick"').fill('Rana رنا')
      await site.getByLabel('E-mail <work>').fill('rana@example.com')
      await site.getByLabel('a<b').check()
      await site.getByLabel('R&D').check()
      await site.getByLabel('Plan').selectOption('pro "plus"')
      await site.getByLabel('I agree').check()
      await Promise.all([site.waitForURL(/\/api\/forms\/submit\//), site.getByRole('button', { name: 'Send' }).click()])
      assert.equal(await site.textContent('h1'), 'Thank you', await site.content())
    } finally {
      await ctx.close()
    }
    const sub = (await s.get(`/svc_api/forms/data/${form.id}`, { key: owner.key })).json.data.submissions
    assert.equal(sub.length, 1)
    assert.deepEqual(sub[0].data, { name: 'Rana رنا', email: 'rana@example.com', topics: ['a<b', 'R&D'], plan: 'pro "plus"', agree: true })
    assert.equal(sub[0].is_spam, false)
  })

  it("offers markup that keeps the form's minimum fill time: a visitor who takes their time is not spam", async () => {
    const form = (
      await s.post('/svc_api/forms/create', {
        key: owner.key,
        json: { form_name: 'Timed', fields_config: [{ name: 'email', type: 'email', required: true }], min_fill_seconds: 1 },
      })
    ).json.data as { id: string }
    const ctx = await session()
    const page = await ctx.newPage()
    try {
      await openSubmissions(page, 'Timed')
      const markup = (await page.textContent('#subs-embed')) ?? ''
      // pasted into a page as it is (the page's time goes into _ts when it loads), and sent by
      // a visitor after the form's minimum fill time
      const site = await ctx.newPage()
      await site.setContent(`<!doctype html><meta charset="utf-8"><body>${markup}</body>`)
      await site.waitForTimeout(1200)
      await site.getByLabel('email').fill('slow@example.com')
      await Promise.all([site.waitForURL(/\/api\/forms\/submit\//), site.getByRole('button', { name: 'Send' }).click()])
      assert.equal(await site.textContent('h1'), 'Thank you', await site.content())
    } finally {
      await ctx.close()
    }
    const sub = (await s.get(`/svc_api/forms/data/${form.id}`, { key: owner.key })).json.data.submissions
    assert.equal(sub.length, 1)
    assert.deepEqual(sub[0].data, { email: 'slow@example.com' })
    assert.equal(sub[0].spam_reason, null)
    assert.equal(sub[0].is_spam, false)
  })
})

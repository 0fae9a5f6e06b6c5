import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { batchUpload, HIGH_LIMITS, HTML, uploadFile } from '../support/hosting.js'
import { mcpHttpClient, textOf } from '../support/mcp.js'

// a form that would send a file's name alone (decision 271), and the warning it gets
const BAD = HTML('apply', '<form id="apply" method="post" action="https://formspree.io/f/x"><input type="file" name="cv"><button>Send</button></form>')
const SENT_WHOLE = HTML('ok', '<form method="post" enctype="multipart/form-data"><input type="file" name="cv"></form>')
const warning = (path: string) =>
  `${path}: the form id="apply" has a file input (name="cv") but no enctype="multipart/form-data": a browser sends only the file's name, not the file. Add enctype="multipart/form-data" to the <form>`
const ZH = /^(\S+)：表单 id="apply" 有文件输入框（name="cv"），但没有 enctype="multipart\/form-data"/

for (const engine of ENGINES) {
  describe(`warnings of every upload path [${engine}]`, () => {
    let s: TestServer
    let u: Awaited<ReturnType<TestServer['user']>>
    let client: Client
    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
      u = await s.user()
      client = await mcpHttpClient(s.url, u.key)
    })
    after(async () => {
      await client.close()
      await s.close()
    })

    it('a batch upload answers the warnings of the pages it stored, in path order and the caller language', async () => {
      const files = [
        { filename: 'z/apply.html', data: BAD },
        { filename: 'index.html', data: BAD },
        { filename: 'ok.html', data: SENT_WHOLE },
        { filename: 'style.css', data: 'form { color: red }' },
      ]
      const r = await batchUpload(s, { key: u.key }, 'batch', files, true, { 'accept-language': 'en' })
      assert.equal(r.status, 200, r.text)
      assert.equal(r.json.uploaded_count, 4)
      assert.deepEqual(r.json.warnings, [
        { path: 'index.html', message: warning('index.html') },
        { path: 'z/apply.html', message: warning('z/apply.html') },
      ])
      const listed = await s.get('/api/folders/batch/files', { key: u.key })
      assert.ok(
        listed.json.files.some((f: { path: string }) => f.path === 'z/apply.html'),
        'stored all the same',
      )
      // a file the batch did not store (it exists, no overwrite) is not warned of; Chinese by default
      const again = await batchUpload(s, { key: u.key }, 'batch', [
        { filename: 'index.html', data: BAD + ' ' },
        { filename: 'new.html', data: BAD },
      ])
      assert.equal(again.status, 200, again.text)
      assert.equal(again.json.failed_count, 1)
      assert.deepEqual(
        again.json.warnings.map((w: { path: string }) => w.path),
        ['new.html'],
      )
      assert.match(again.json.warnings[0].message, ZH)
      // nothing to say: an empty list
      const clean = await batchUpload(s, { key: u.key }, 'batch', [{ filename: 'clean.html', data: SENT_WHOLE }])
      assert.deepEqual(clean.json.warnings, [])
    })

    it('a single-page upload answers its warnings beside data', async () => {
      const r = await uploadFile(s, { key: u.key }, 'apply.html', BAD, {}, { 'accept-language': 'en' })
      assert.equal(r.status, 200, r.text)
      assert.equal(r.json.data.file_name, 'apply.html')
      assert.deepEqual(r.json.warnings, [{ path: 'apply.html', message: warning('apply.html') }])
      const zh = await uploadFile(s, { key: u.key }, 'apply.html', BAD)
      assert.match(zh.json.warnings[0].message, ZH)
      const clean = await uploadFile(s, { key: u.key }, 'fine.html', SENT_WHOLE, {}, { 'accept-language': 'en' })
      assert.deepEqual(clean.json.warnings, [])
    })

    it("a folder project's form posting to the form endpoint with a relative _next is warned of, with the _next from the root (decision 321)", async () => {
      const form = (action: string, next: string | null, id = 'contact') =>
        HTML(
          'contact',
          `<form id="${id}" method="post" action="${action}">${next === null ? '' : `<input type="hidden" name="_next" value="${next}">`}<input name="email"></form>`,
        )
      const submit = `${s.url}/api/forms/submit/contact-form`
      const files = [
        { filename: 'index.html', data: form(submit, 'thanks.html') },
        { filename: 'contact/index.html', data: form(submit, 'done/?ok=1', 'deep') },
        // not warned: from the root, a full URL, protocol-relative, no _next, another service
        { filename: 'root.html', data: form(submit, '/site2/thanks.html') },
        { filename: 'full.html', data: form(submit, 'https://example.com/thanks.html') },
        { filename: 'proto.html', data: form(submit, '//example.com/thanks.html') },
        { filename: 'none.html', data: form(submit, null) },
        { filename: 'other.html', data: form('https://formspree.io/f/x', 'thanks.html') },
        { filename: 'commented.html', data: `<!-- ${form(submit, 'thanks.html')} -->` },
      ]
      const r = await batchUpload(s, { key: u.key }, 'site2', files, true, { 'accept-language': 'en' })
      assert.equal(r.status, 200, r.text)
      assert.deepEqual(r.json.warnings, [
        {
          path: 'contact/index.html',
          message:
            'contact/index.html: the form id="deep" posts to the form endpoint at another address with a relative _next ("done/?ok=1"): a browser tells that endpoint only the site\'s origin, not this page, so the visitor lands on "/done/?ok=1" at the site\'s root, not next to this page. Write _next from the root ("/site2/contact/done/?ok=1" on your user address) or as a full URL',
        },
        {
          path: 'index.html',
          message:
            'index.html: the form id="contact" posts to the form endpoint at another address with a relative _next ("thanks.html"): a browser tells that endpoint only the site\'s origin, not this page, so the visitor lands on "/thanks.html" at the site\'s root, not next to this page. Write _next from the root ("/site2/thanks.html" on your user address) or as a full URL',
        },
      ])
      // a single page is served at its origin's root, where the two agree: nothing to say
      const single = await uploadFile(s, { key: u.key }, 'contact.html', form(submit, 'thanks.html'), {}, { 'accept-language': 'en' })
      assert.equal(single.status, 200, single.text)
      assert.deepEqual(single.json.warnings, [])
      // MCP's deploy_files says the same
      const mcp = (await client.callTool({
        name: 'deploy_files',
        arguments: { project: 'mcp-next', files: [{ path: 'index.html', content: form(submit, 'thanks.html') }] },
      })) as unknown as { structuredContent: { warnings: Array<{ path: string; message: string }> } }
      assert.deepEqual(
        mcp.structuredContent.warnings.map((w) => w.path),
        ['index.html'],
      )
      assert.match(mcp.structuredContent.warnings[0].message, /"\/mcp-next\/thanks\.html"/)
    })

    it("a page loading a bundler's source as a module script is warned of on every deploy path; a build's page is not (304)", async () => {
      const page = (src: string) => `<!doctype html><title>app</title><div id="root"></div><script type="module" src="${src}"></script>`
      const files = [
        { filename: 'index.html', data: page('/src/main.tsx') },
        { filename: 'vue.html', data: page('./src/App.vue?v=1') },
        // not warned: a build's entry, another origin's module, a source named only in a comment
        { filename: 'built.html', data: page('/assets/index-4f2a1b.js') },
        { filename: 'cdn.html', data: page('https://esm.sh/app.tsx') },
        { filename: 'commented.html', data: `<!-- ${page('/src/main.tsx')} -->` },
      ]
      const r = await batchUpload(s, { key: u.key }, 'app-source', files, true, { 'accept-language': 'en' })
      assert.equal(r.status, 200, r.text)
      assert.deepEqual(r.json.warnings, [
        {
          path: 'index.html',
          message:
            'index.html: loads /src/main.tsx as a module script, which browsers do not run before a build (JSX, TypeScript, Vue or Svelte source), so the page stays blank. Build it (npm run build) and deploy the folder the build writes (such as dist/)',
        },
        {
          path: 'vue.html',
          message:
            'vue.html: loads ./src/App.vue?v=1 as a module script, which browsers do not run before a build (JSX, TypeScript, Vue or Svelte source), so the page stays blank. Build it (npm run build) and deploy the folder the build writes (such as dist/)',
        },
      ])
      // MCP's deploy_files (and so the dashboard and API zip deploys, which share the warnings) says the same
      const mcp = (await client.callTool({
        name: 'deploy_files',
        arguments: { project: 'mcp-source', files: [{ path: 'index.html', content: page('/src/main.jsx') }] },
      })) as unknown as { structuredContent: { warnings: Array<{ path: string; message: string }> } }
      assert.match(mcp.structuredContent.warnings[0]?.message ?? '', /^index\.html: loads \/src\/main\.jsx as a module script/)
    })

    it('pages of unclosed tags are read in time linear in their size: the upload answers, the server stays free', { timeout: 60_000 }, async () => {
      // each of these made the old pattern matching rescan the rest of the page from every tag
      const big = 512 * 1024
      const files = [
        { filename: 'forms.html', data: '<form '.repeat(big / 6) },
        { filename: 'inputs.html', data: `<input type=password><form action="https://x.example/">${'<input '.repeat(big / 7)}` },
        { filename: 'scripts.html', data: '<script>'.repeat(big / 8) },
        { filename: 'nested.html', data: '<b>'.repeat(big / 3) },
      ]
      const upload = batchUpload(s, { key: u.key }, 'unclosed', files, true)
      // meanwhile the event loop answers others at once
      const health = await s.get('/healthz')
      assert.equal(health.status, 200)
      const r = await upload
      assert.equal(r.status, 200, r.text)
      assert.equal(r.json.uploaded_count, 4)
    })

    it("MCP's publish_html and deploy_files (live and preview) list the warnings in their text and structuredContent", async () => {
      type Result = { isError?: boolean; content: Array<{ type: string; text: string }>; structuredContent: any }
      const call = async (name: string, args: Record<string, unknown>) => {
        const r = (await client.callTool({ name, arguments: args })) as Result
        assert.ok(!r.isError, `${name}: ${textOf(r)}`)
        return r
      }
      const page = await call('publish_html', { name: 'mcp-apply', html: BAD })
      assert.deepEqual(page.structuredContent.warnings, [{ path: 'mcp-apply.html', message: warning('mcp-apply.html') }])
      assert.ok(textOf(page).endsWith(`\nWarning: ${warning('mcp-apply.html')}`), textOf(page))

      const files = [
        { path: 'index.html', content: SENT_WHOLE },
        { path: 'jobs/apply.html', content: BAD },
      ]
      const live = await call('deploy_files', { project: 'mcp-site', files })
      assert.deepEqual(live.structuredContent.warnings, [{ path: 'jobs/apply.html', message: warning('jobs/apply.html') }])
      assert.match(textOf(live), new RegExp(`\\nWarning: jobs/apply\\.html: the form id="apply"`))
      assert.equal((await s.get(`/${u.username}/mcp-site/jobs/apply.html`)).text, BAD)

      const preview = await call('deploy_files', { project: 'mcp-preview', files, publish: false })
      assert.deepEqual(preview.structuredContent.warnings, [{ path: 'jobs/apply.html', message: warning('jobs/apply.html') }])
      assert.match(textOf(preview), /\nWarning: jobs\/apply\.html: /)

      const clean = await call('publish_html', { name: 'mcp-clean', html: SENT_WHOLE })
      assert.deepEqual(clean.structuredContent.warnings, [])
      assert.doesNotMatch(textOf(clean), /Warning/)
    })
  })
}

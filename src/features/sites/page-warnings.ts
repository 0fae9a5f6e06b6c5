import { Type } from '@sinclair/typebox'
import type { Lang } from '../../errors/render.js'
import type { Abuse } from '../abuse/service.js'
import {
  fileInputsSentAsNames,
  moduleScriptSources,
  readPage,
  relativeNextsToEndpoint,
  sourceOnlyModule,
  type FileAsName,
  type PageRead,
} from '../../util/html.js'

/** A problem a deployed page has that the owner should hear of (it deploys all the same). */
export interface PageWarning {
  path: string
  zh: string
  en: string
}

/**
 * What a deploy says about a page: each form whose file input a browser would send as the
 * file's name alone (no enctype="multipart/form-data", or sent by GET), naming the page, the
 * form and the input; and, on a folder project's page (`project`), each form posting to the
 * submit endpoint with a relative `_next` (docs/api/deploys.md, Warnings). All from one read
 * of the page (`page`: read already, or read here once).
 */
export function pageWarnings(path: string, page: string | PageRead, project: string | null = null): PageWarning[] {
  const read = typeof page === 'string' ? readPage(page) : page
  return [
    ...sourceWarnings(path, read),
    ...fileInputsSentAsNames(read).map((f) => fileWarning(path, f)),
    ...(project === null ? [] : nextWarnings(path, read, project)),
  ]
}

/**
 * A page that loads a bundler's source as a module script (`/src/main.tsx`): no browser runs
 * it, so the page stays blank. Every deploy path says so, the dashboard's zip card and the API
 * too, where the CLI and the folder upload refuse such a folder before sending (304).
 */
function sourceWarnings(path: string, read: PageRead): PageWarning[] {
  return moduleScriptSources(read)
    .filter(sourceOnlyModule)
    .map((src) => ({
      path,
      zh: `${path}：以模块脚本加载 ${src}，浏览器不能在构建之前运行它（JSX、TypeScript、Vue 或 Svelte 源码），页面会是空白的。请先构建（npm run build），再部署构建出的文件夹（如 dist/）`,
      en: `${path}: loads ${src} as a module script, which browsers do not run before a build (JSX, TypeScript, Vue or Svelte source), so the page stays blank. Build it (npm run build) and deploy the folder the build writes (such as dist/)`,
    }))
}

function fileWarning(path: string, f: FileAsName): PageWarning {
  const what = { zh: `表单 ${f.form} 有文件输入框（${f.input}）`, en: `the form ${f.form} has a file input (${f.input})` }
  if (f.get)
    return {
      path,
      zh: `${path}：${what.zh}，但以 GET 发送，只带文件名，不带文件。请用 method="post" 和 enctype="multipart/form-data"`,
      en: `${path}: ${what.en} but is sent by GET, which carries only the file's name, not the file. Use method="post" and enctype="multipart/form-data"`,
    }
  return {
    path,
    zh: `${path}：${what.zh}，但没有 enctype="multipart/form-data"：浏览器只发送文件名，不发送文件。请在 <form> 上加 enctype="multipart/form-data"`,
    en: `${path}: ${what.en} but no enctype="multipart/form-data": a browser sends only the file's name, not the file. Add enctype="multipart/form-data" to the <form>`,
  }
}

/**
 * A folder project's page (`path` in `project`, served at /{project}/{path} on the user's
 * origin) whose form posts to the submit endpoint with a relative `_next`: the endpoint sees
 * only the site's origin, so the visitor would land at the root (decision 321).
 * The warning names where it lands and the `_next` from the root that lands next to the page.
 */
function nextWarnings(path: string, read: PageRead, project: string): PageWarning[] {
  return relativeNextsToEndpoint(read).flatMap((f) => {
    // a _next no URL parser resolves (`\\[`) is the page's own mistake, not a relative path:
    // nothing to say, and nothing thrown (decision 329)
    const at = (base: string) => {
      const u = URL.canParse(f.next, `http://site.invalid${base}`) ? new URL(f.next, `http://site.invalid${base}`) : null
      return u === null ? null : `${u.pathname}${u.search}${u.hash}`
    }
    const lands = at('/')
    const meant = at(`/${encodeURIComponent(project)}/${path.split('/').map(encodeURIComponent).join('/')}`)
    if (lands === null || meant === null) return []
    return {
      path,
      zh: `${path}：表单 ${f.form} 提交到另一地址的表单接口，_next 却是相对地址（"${f.next}"）：浏览器只把网站的来源告诉该接口，不告诉本页，访客会落到站点根下的 "${lands}"，而不是本页旁边。请把 _next 写成从根开始的路径（在你的用户地址上是 "${meant}"）或完整网址`,
      en: `${path}: the form ${f.form} posts to the form endpoint at another address with a relative _next ("${f.next}"): a browser tells that endpoint only the site's origin, not this page, so the visitor lands on "${lands}" at the site's root, not next to this page. Write _next from the root ("${meant}" on your user address) or as a full URL`,
    }
  })
}

type ScannedPage = Parameters<Abuse['scanPages']>[1][number]

/**
 * Runs the upload heuristics on the pages an upload stored and gives the owner's warnings of
 * those pages, from the same read (each page read once, at most the heuristics' pages and
 * bytes), in path order. Every way a site goes up answers them (decisions 271, 281).
 * `warnFor`: the paths the upload stored (a batch's conflicting files are not); default all.
 */
export async function scanAndWarn(
  abuse: Abuse,
  user: { id: string; username: string },
  pages: ScannedPage[],
  opts: { origin?: string; warnFor?: ReadonlySet<string> } = {},
): Promise<PageWarning[]> {
  const warnings: PageWarning[] = []
  await abuse.scanPages(user, pages, {
    origin: opts.origin,
    // a single file has no path in a project: its name is its path
    each: (p, read) => {
      const path = p.path || p.name
      // a folder project's page is served below /{project}/ on the user's origin; a page whose
      // warnings fail has none, and the heuristics still read it and the pages after it
      if (!opts.warnFor || opts.warnFor.has(path)) {
        try {
          warnings.push(...pageWarnings(path, read(), p.path ? p.name : null))
        } catch {
          // (pageWarnings throws on no page it was tested with; see decision 329)
        }
      }
    },
  })
  return warnings.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
}

/** Warnings as an answer gives them: `{path, message}` in one language. */
export const warningsIn = (warnings: PageWarning[], lang: Lang) => warnings.map((w) => ({ path: w.path, message: w[lang] }))

/** The `warnings` field of an upload's answer (OpenAPI). */
export const WarningsField = (what: string) =>
  Type.Array(Type.Object({ path: Type.String(), message: Type.String() }), {
    description: `problems of ${what}, which are stored all the same: a page loading a bundler's source (.jsx, .tsx, .ts, .vue, .svelte) as a module script, which browsers do not run; a form whose file input a browser would send as the file's name alone (no enctype="multipart/form-data", or sent by GET), naming the page, the form and the input; a folder project's form posting to the form endpoint with a relative _next, which lands at the site's root; in path order`,
  })

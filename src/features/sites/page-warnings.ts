import { Type } from '@sinclair/typebox'
import type { Lang } from '../../errors/render.js'
import type { Abuse } from '../abuse/service.js'
import { fileInputsSentAsNames } from '../../util/html.js'

/** A problem a deployed page has that the owner should hear of (it deploys all the same). */
export interface PageWarning {
  path: string
  zh: string
  en: string
}

/**
 * What a deploy says about a page: each form whose file input a browser would send as the
 * file's name alone (no enctype="multipart/form-data", or sent by GET), naming the page, the
 * form and the input (docs/api/deploys.md, Warnings).
 */
export function pageWarnings(path: string, html: string): PageWarning[] {
  return fileInputsSentAsNames(html).map((f) => {
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
    each: (p, html) => {
      const path = p.path || p.name
      if (!opts.warnFor || opts.warnFor.has(path)) warnings.push(...pageWarnings(path, html))
    },
  })
  return warnings.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
}

/** Warnings as an answer gives them: `{path, message}` in one language. */
export const warningsIn = (warnings: PageWarning[], lang: Lang) => warnings.map((w) => ({ path: w.path, message: w[lang] }))

/** The `warnings` field of an upload's answer (OpenAPI). */
export const WarningsField = (what: string) =>
  Type.Array(Type.Object({ path: Type.String(), message: Type.String() }), {
    description: `problems of ${what}, which are stored all the same: a form whose file input a browser would send as the file's name alone (no enctype="multipart/form-data", or sent by GET), naming the page, the form and the input; in path order`,
  })

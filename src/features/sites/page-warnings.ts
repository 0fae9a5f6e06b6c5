import { fileInputsSentAsNames } from '../../util/html.js'

/** A problem a deployed page has that the owner should hear of (it deploys all the same). */
export interface PageWarning {
  path: string
  zh: string
  en: string
}

// the service's own form endpoint (docs/api/forms.md), which takes no files, as a Netlify form
// posted to the site does not
const SVC_FORM = /\/api\/forms\/submit\//

/**
 * What a deploy says about a page: each form whose file input a browser would send as the
 * file's name alone (no enctype="multipart/form-data", or sent by GET), naming the page, the
 * form and the input (docs/api/deploys.md, Warnings).
 */
export function pageWarnings(path: string, html: string): PageWarning[] {
  return fileInputsSentAsNames(html).map((f) => {
    const what = { zh: `表单 ${f.form} 有文件输入框（${f.input}）`, en: `the form ${f.form} has a file input (${f.input})` }
    if (SVC_FORM.test(f.action) || f.netlify)
      return {
        path,
        zh: `${path}：${what.zh}，但 svc 表单不接收文件：浏览器只发送文件名（加上 enctype="multipart/form-data" 则提交被拒绝，1614）。请去掉该输入框`,
        en: `${path}: ${what.en}, but svc forms take no files: a browser sends only the file's name (with enctype="multipart/form-data" the submission is refused, 1614). Remove the input`,
      }
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

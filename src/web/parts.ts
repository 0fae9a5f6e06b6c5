import { html } from './html.js'
import type { PageCtx } from './page.js'

/**
 * Pieces of page frames that several features' pages share. A page's script finds them by id
 * and fills them from the JSON API.
 */

/** A live status line. */
export const status = (id: string) => html`<p id="${id}" class="status" role="status" aria-live="polite"></p>`

/** An upload progress bar with its cancel button, hidden until a script shows it (common.js progress). */
export const progress = <K extends string>(ctx: PageCtx<K>, id: string) =>
  html`<div class="progress" id="${id}" hidden><progress max="100" value="0" aria-label="${ctx.t('common.progress')}"></progress> <span></span> <button type="button" class="cancel" hidden>${ctx.t('common.cancel_upload')}</button></div>`

/** Paging links, filled by common.js. */
export const pager = (id: string) => html`<nav class="pager" id="${id}" hidden></nav>`

/** An empty table with its column headings and an actions column. */
export const table = <K extends string>(ctx: PageCtx<K>, id: string, cols: K[]) => html`
  <div class="table-wrap"><table id="${id}">
    <thead><tr>${cols.map((c) => html`<th scope="col">${ctx.t(c)}</th>`)}<th scope="col"><span class="sr">${ctx.t('common.actions')}</span></th></tr></thead>
    <tbody></tbody>
  </table></div>`

/** The redeem-code form of the pages whose part needs activation (common.js submits it). */
export function redeemForm<K extends string>(ctx: PageCtx<K>) {
  return html`<form id="redeem-form" class="card" hidden>
    <h2>${ctx.t('redeem.title')}</h2>
    <label for="redeem-code">${ctx.t('redeem.code')}</label>
    <input id="redeem-code" name="code" required maxlength="128" autocomplete="off" spellcheck="false">
    <button type="submit" class="primary">${ctx.t('redeem.submit')}</button>
  </form>`
}

import { Type } from '@sinclair/typebox'
import { AppError } from '../errors/app-error.js'
import { MAX_PAGE, MAX_PER_PAGE } from './page-limits.js'

export interface Page {
  page: number
  perPage: number
  offset: number
}

const INT_RE = /^\d{1,9}$/

/**
 * A query parameter of a list route that may be repeated (`?page=1&page=2`, a pager that
 * appends to a URL that already names a page): the schema takes one value or several, and
 * the handler reads the last one (`lastValue`), as the public links do.
 */
export const repeatable = (description: string) => Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())], { description }))

/** The value of a repeatable query parameter: its last one. */
export const lastValue = (v: unknown): unknown => (Array.isArray(v) ? v[v.length - 1] : v)

/** Reads page / per_page from a query: defaults, bounds, 1107/1108 for bad values. */
export function parsePage(query: Record<string, unknown>, defaults: { perPage: number; maxPerPage?: number }): Page {
  const max = defaults.maxPerPage ?? MAX_PER_PAGE
  const p = lastValue(query.page)
  const pp = lastValue(query.per_page)
  let page = 1
  let perPage = defaults.perPage
  if (p !== undefined && p !== '') {
    if (typeof p !== 'string' || !INT_RE.test(p) || Number(p) < 1) throw new AppError('INVALID_PAGE', { params: { max: MAX_PAGE } })
    page = Number(p)
  }
  if (pp !== undefined && pp !== '') {
    if (typeof pp !== 'string' || !INT_RE.test(pp) || Number(pp) < 1 || Number(pp) > max) {
      throw new AppError('INVALID_PER_PAGE', { params: { min: 1, max } })
    }
    perPage = Number(pp)
  }
  return { page, perPage, offset: (page - 1) * perPage }
}

/** The paging fields of a list answer. */
export function pageInfo(p: Page, total: number) {
  return { page: p.page, per_page: p.perPage, total, total_pages: Math.ceil(total / p.perPage) }
}

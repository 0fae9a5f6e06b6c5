import { AppError } from '../errors/app-error.js'

export interface Page {
  page: number
  perPage: number
  offset: number
}

const INT_RE = /^\d{1,9}$/

/** Reads page / per_page from a query: defaults, bounds, 1107/1108 for bad values. */
export function parsePage(query: Record<string, unknown>, defaults: { perPage: number; maxPerPage?: number }): Page {
  const max = defaults.maxPerPage ?? 100
  const one = (v: unknown) => (Array.isArray(v) ? v[v.length - 1] : v)
  const p = one(query.page)
  const pp = one(query.per_page)
  let page = 1
  let perPage = defaults.perPage
  if (p !== undefined && p !== '') {
    if (typeof p !== 'string' || !INT_RE.test(p) || Number(p) < 1) throw new AppError('INVALID_PAGE')
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

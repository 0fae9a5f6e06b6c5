import { csvCell, csvText, fieldHeaders } from '../../util/csv.js'
import type { FieldDef } from './fields.js'
import { fileUrl, submissionView, type FormView } from './service.js'
import type { FileRow, SubmissionRow } from './store.js'

const FIXED = ['submission_id', 'created_at', 'is_read', 'is_spam', 'spam_reason'] as const
const TAIL = ['user_agent', 'ip_prefix'] as const
const FILES = 'files'

/**
 * The CSV export (UTF-8 with a byte-order mark so spreadsheets read Chinese text): fixed
 * columns, then the form's fields in their order followed by every other name found in the
 * exported rows (from a first pass: fields since removed from fields_config, or every field of
 * a form without one, the fields files were sent in included; a field's cell ends with the
 * links of its files), then `files` (all of a submission's files, one a line: `link`, the
 * owner's download URL) when the form declares a file field or a row has a file,
 * then user agent and client network. Every stored value has a column, as in the JSON export,
 * and no header is repeated (fieldHeaders).
 */
export async function* csvExport(
  fields: FieldDef[],
  rows: () => AsyncIterable<SubmissionRow>,
  link: (f: FileRow) => string = (f) => fileUrl('', f.id),
): AsyncGenerator<string> {
  const seen = new Set(fields.map((f) => f.name))
  let files = fields.some((f) => f.type === 'file')
  for await (const r of rows()) {
    for (const k of Object.keys(JSON.parse(r.data) as object)) seen.add(k)
    // a file's field has a column too (a form without fields_config names it only there)
    for (const f of r.files ?? []) seen.add(f.field)
    if ((r.files ?? []).length > 0) files = true
  }
  const columns = [...seen]
  const tail = files ? [FILES, ...TAIL] : [...TAIL]
  yield '\uFEFF' + [...FIXED, ...fieldHeaders([...FIXED, ...tail], columns), ...tail].map(csvCell).join(',') + '\r\n'
  for await (const r of rows()) {
    const v = submissionView(r)
    // own keys only: a field named "constructor" that this submission lacks is an empty cell
    const value = (c: string) => (Object.hasOwn(v.data, c) ? v.data[c] : undefined)
    // a field's cell holds its text, then the links of the files sent in it, one a line, as
    // the dashboard shows them (decision 311)
    const field = (c: string) => {
      const sent = (r.files ?? []).filter((f) => f.field === c).map(link)
      if (sent.length === 0) return value(c)
      const text = value(c)
      return [...(text === undefined || text === null ? [] : [csvText(text)]), ...sent].join('\n')
    }
    const urls = files ? [(r.files ?? []).map(link).join('\n')] : []
    const cells = [v.id, v.created_at, v.is_read, v.is_spam, v.spam_reason, ...columns.map(field), ...urls, v.user_agent, v.ip_prefix]
    yield cells.map(csvCell).join(',') + '\r\n'
  }
}

/**
 * The JSON export, streamed: {success, data:{form, submissions:[...], exported_count,
 * total_count, truncated, export_limit}}.
 */
export async function* jsonExport(form: FormView, rows: AsyncIterable<SubmissionRow>, total: number, cap: number, base = ''): AsyncGenerator<string> {
  yield `{"success":true,"data":{"form":${JSON.stringify(form)},"submissions":[`
  let n = 0
  for await (const r of rows) {
    yield (n ? ',' : '') + JSON.stringify(submissionView(r, base))
    n++
  }
  yield `],"exported_count":${n},"total_count":${total},"truncated":${total > n},"export_limit":${cap}}}`
}

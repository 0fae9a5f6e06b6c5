import { escapeHtml } from '../util/html.js'

/**
 * Tiny HTML templating with escaping by default: every value interpolated into an `html`
 * template is escaped unless it is itself a SafeHtml (the result of another `html` template
 * or of `raw`). User content can therefore only reach a page as text.
 */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value
  }
}

type Value = SafeHtml | string | number | boolean | null | undefined | Value[]

function render(v: Value): string {
  if (v === null || v === undefined || v === false) return ''
  if (v instanceof SafeHtml) return v.value
  if (Array.isArray(v)) return v.map(render).join('')
  return escapeHtml(String(v))
}

/** Tagged template: `html\`<p>${text}</p>\`` escapes `text`. */
export function html(strings: TemplateStringsArray, ...values: Value[]): SafeHtml {
  let out = strings[0]
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1]
  return new SafeHtml(out)
}

/** Marks trusted markup (constants of the service only, never user input). */
export const raw = (s: string): SafeHtml => new SafeHtml(s)

/**
 * JSON for a `<script type="application/json">` block: `<`, `>`, `&` and the line separators
 * are escaped, so no value can close the element or start markup.
 */
export function jsonForScript(value: unknown): SafeHtml {
  const s = JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029')
  return new SafeHtml(s)
}

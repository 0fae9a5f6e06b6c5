import type { Text } from '../errors/text.js'

/**
 * The first field of an object body that is none of `allowed`, with a text naming it and what
 * is taken; null when there is none. A field the service would ignore (a typo, another
 * service's name for it) is refused by its caller's own error instead of being dropped.
 */
export function unknownField(body: object, allowed: readonly string[]): { field: string; detail: Text } | null {
  for (const field of Object.keys(body)) {
    if (!allowed.includes(field))
      return {
        field,
        detail: { zh: `未知字段 "${field}"（可发送 ${allowed.join('、')}）`, en: `unknown field "${field}" (send ${allowed.join(', ')})` },
      }
  }
  return null
}

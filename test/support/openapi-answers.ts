import { Ajv2020 } from 'ajv/dist/2020.js'

type Doc = { paths: Record<string, Record<string, { responses: Record<string, any> }>>; components: Record<string, any> }

/**
 * Checks real answers against the OpenAPI document the server serves: `check(method, path
 * template, status, json)` names what is wrong (the status undeclared, no JSON schema for it,
 * a body the schema refuses), or returns null. A generated client reads answers by these
 * schemas, so one that is missing or wrong is a client that cannot read the field. An answer
 * that is not JSON passes its Content-Type as `media`: the answer must declare that media type
 * (or a wildcard of it); its body is not checked.
 */
export function answerChecker(doc: Doc): (method: string, template: string, status: number, json: unknown, media?: string | null) => string | null {
  const ajv = new Ajv2020({ strict: false, allErrors: true })
  ajv.addSchema({ $id: 'doc', components: doc.components })
  const local = (s: unknown) => JSON.parse(JSON.stringify(s).replaceAll('"#/components/', '"doc#/components/')) as object
  return (method, template, status, json, media) => {
    const op = doc.paths[template]?.[method.toLowerCase()]
    if (!op) return `${method} ${template}: no such operation in the document`
    let r = op.responses[String(status)] ?? op.responses[`${String(status)[0]}XX`]
    if (r?.$ref) r = doc.components.responses[String(r.$ref).split('/').pop()!]
    if (!r) return `${method} ${template}: status ${status} is not declared`
    const type = (media ?? 'application/json').split(';')[0].trim().toLowerCase()
    if (type !== 'application/json') {
      const declared = Object.keys(r.content ?? {})
      const ok = [type, `${type.split('/')[0]}/*`, '*/*'].some((t) => declared.includes(t))
      return ok ? null : `${method} ${template}: ${status} declares no ${type} body (${declared.join(', ') || 'none'})`
    }
    const schema = r.content?.['application/json']?.schema
    if (!schema) return `${method} ${template}: ${status} declares no JSON body`
    const v = ajv.compile(local(schema))
    return v(json) ? null : `${method} ${template}: ${status} ${ajv.errorsText(v.errors)}`
  }
}

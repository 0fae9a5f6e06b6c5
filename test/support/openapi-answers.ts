import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'

export type OpenApiDoc = { paths: Record<string, Record<string, { responses: Record<string, any> }>>; components: Record<string, any> }

/**
 * Checks real answers against the OpenAPI document the server serves: `check(method, path
 * template, status, json)` names what is wrong (the status undeclared, no JSON schema for it,
 * a body the schema refuses), or returns null. A generated client reads answers by these
 * schemas, so one that is missing or wrong is a client that cannot read the field. An answer
 * that is not JSON passes its Content-Type as `media`: the answer must declare that media type
 * (or a wildcard of it); its body is not checked.
 */
export function answerChecker(doc: OpenApiDoc): (method: string, template: string, status: number, json: unknown, media?: string | null) => string | null {
  const ajv = new Ajv2020({ strict: false, allErrors: true })
  ajv.addSchema({ $id: 'doc', components: doc.components })
  const local = (s: unknown) => JSON.parse(JSON.stringify(s).replaceAll('"#/components/', '"doc#/components/')) as object
  // one compiled validator per answer schema: the suite checks every answer it gets (below)
  const compiled = new Map<object, ValidateFunction>()
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
    const schema = r.content?.['application/json']?.schema as object | undefined
    if (!schema) return `${method} ${template}: ${status} declares no JSON body`
    let v = compiled.get(schema)
    if (!v) compiled.set(schema, (v = ajv.compile(local(schema))))
    return v(json) ? null : `${method} ${template}: ${status} ${ajv.errorsText(v.errors)}`
  }
}

/**
 * The suite's check of every JSON answer of the API (`/svc_api/…`, `/api/…`, `/mcp`) against the
 * document (test/support/server.ts runs it on each request): the path is matched to its
 * template, the one with the most fixed characters first, a parameter taking one segment,
 * then one that may take several (a file's path). A path or method the document has no
 * operation for is not checked: those are the tests of unknown routes and of methods a route
 * does not take. An answer in another media type (`media`) is checked for that type only.
 */
export function documentedAnswers(doc: OpenApiDoc): (method: string, url: string, status: number, json: unknown, media?: string | null) => string | null {
  const check = answerChecker(doc)
  const matcher = (template: string, param: string) => new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, param)}$`)
  const templates = Object.keys(doc.paths)
    .map((t) => ({ t, one: matcher(t, '[^/]+'), many: matcher(t, '.+'), literal: t.replace(/\{[^}]+\}/g, '').length }))
    .sort((a, b) => b.literal - a.literal)
  return (method, url, status, json, media) => {
    const path = url.split(/[?#]/)[0]
    if (!/^\/(svc_api\/|api\/|mcp$)/.test(path)) return null
    const hit = templates.find((x) => x.one.test(path)) ?? templates.find((x) => x.many.test(path))
    if (!hit || !doc.paths[hit.t][method.toLowerCase()]) return null
    return check(method, hit.t, status, json, media)
  }
}

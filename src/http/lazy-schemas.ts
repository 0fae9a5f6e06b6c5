import ValidatorSelector, { type ValidatorFactory } from '@fastify/ajv-compiler'
import SerializerSelector, { type SerializerFactory } from '@fastify/fast-json-stringify-compiler'

export type Compiled = ((...args: unknown[]) => unknown) & { errors?: unknown; schemaEnv?: unknown }

/**
 * A function that compiles itself (`build`) on its first call, or on the first read of the
 * `errors` and `schemaEnv` Fastify reads off an AJV validator; until then it waits in `pending`.
 */
export function lazyCompiled(build: () => Compiled, pending?: Set<() => unknown>): Compiled {
  let fn: Compiled | undefined
  const get = (): Compiled => {
    if (fn === undefined) {
      fn = build()
      pending?.delete(get)
    }
    return fn
  }
  pending?.add(get)
  const wrapper = function (this: unknown, ...args: unknown[]) {
    return get().apply(this, args)
  } as Compiled
  Object.defineProperties(wrapper, {
    errors: { get: () => get().errors },
    schemaEnv: { get: () => get().schemaEnv },
  })
  return wrapper
}

type Schema = Record<string, unknown>
/** A failure as AJV reports one (what http/errors.ts words). */
interface SchemaFailure {
  instancePath: string
  schemaPath: string
  keyword: string
  params: Record<string, unknown>
  message: string
}

const isSchema = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v)
const branches = (s: Schema): Schema[] =>
  (['anyOf', 'oneOf', 'allOf'] as const).flatMap((k) => (Array.isArray(s[k]) ? (s[k] as unknown[]).filter(isSchema) : []))
const numeric = (s: Schema): boolean => [s.type].flat().some((t) => t === 'number' || t === 'integer')

/** The failure a non-finite number at a numeric position is: past its bound, as a large finite one would be, else its type. */
function nonFinite(s: Schema, value: number, path: string): SchemaFailure {
  const forms = [s, ...branches(s)].filter(numeric)
  const [keyword, comparison] = value > 0 ? (['maximum', '<='] as const) : (['minimum', '>='] as const)
  const bounded = forms.find((f) => typeof f[keyword] === 'number')
  if (bounded)
    return {
      instancePath: path,
      schemaPath: `#${path}/${keyword}`,
      keyword,
      params: { comparison, limit: bounded[keyword] },
      message: `must be ${comparison} ${String(bounded[keyword])}`,
    }
  const type = [...new Set(forms.flatMap((f) => [f.type].flat()))].join(',')
  return { instancePath: path, schemaPath: `#${path}/type`, keyword: 'type', params: { type }, message: `must be ${type}` }
}

/**
 * The first number the schema declares (number or integer, also in a union) that holds
 * Infinity or NaN. AJV's coercion turns a string such as "1e309" or "Infinity" into Infinity,
 * accepts it as an integer and checks no minimum or maximum on a non-finite number, so
 * `?page=1e309` reached the database (SQLite: datatype mismatch, 500). Walks the schema, not
 * the data: only declared positions are visited.
 */
function nonFiniteNumber(s: unknown, value: unknown, path = ''): SchemaFailure | null {
  if (!isSchema(s)) return null
  if (typeof value === 'number' && !Number.isFinite(value) && (numeric(s) || branches(s).some(numeric))) return nonFinite(s, value, path)
  for (const b of branches(s)) {
    const f = nonFiniteNumber(b, value, path)
    if (f) return f
  }
  if (typeof value !== 'object' || value === null) return null
  const at = (k: string | number) => `${path}/${String(k).replace(/~/g, '~0').replace(/\//g, '~1')}`
  if (Array.isArray(value)) {
    if (!isSchema(s.items)) return null
    for (let i = 0; i < value.length; i++) {
      const f = nonFiniteNumber(s.items, value[i], at(i))
      if (f) return f
    }
    return null
  }
  if (!isSchema(s.properties) && !isSchema(s.additionalProperties)) return null
  const props = isSchema(s.properties) ? s.properties : {}
  const obj = value as Record<string, unknown>
  for (const k of Object.keys(obj)) {
    const sub = Object.hasOwn(props, k) ? props[k] : s.additionalProperties
    const f = nonFiniteNumber(sub, obj[k], at(k))
    if (f) return f
  }
  return null
}

/** Whether the schema declares a number anywhere `nonFiniteNumber` looks (properties, items, unions). */
function declaresNumber(s: unknown): boolean {
  if (!isSchema(s)) return false
  if (numeric(s) || branches(s).some(declaresNumber)) return true
  const props = isSchema(s.properties) ? Object.values(s.properties) : []
  return [...props, s.additionalProperties, s.items].some(declaresNumber)
}

/**
 * A validator of Fastify's coercing AJV that also refuses what `nonFiniteNumber` finds; a
 * schema that declares no number keeps AJV's validator as it is, with no walk per request.
 */
function finiteOnly(validate: Compiled, schema: unknown): Compiled {
  if (!declaresNumber(schema)) return validate
  let errors: unknown = null
  const checked = function (this: unknown, ...args: unknown[]) {
    if (validate.apply(this, args) !== true) {
      errors = validate.errors
      return false
    }
    const f = nonFiniteNumber(schema, args[0])
    errors = f ? [f] : null
    return f === null
  } as Compiled
  Object.defineProperties(checked, {
    errors: { get: () => errors },
    schemaEnv: { get: () => validate.schemaEnv },
  })
  return checked
}

/**
 * Fastify's own schema compilers (AJV for input, fast-json-stringify for answers), each route
 * schema compiled on its first use instead of while the server starts: a start compiled every
 * route's schemas, most of which a given process never uses (a CLI test's server, a restart
 * after a crash). What is compiled, and how, is unchanged; each validator also refuses a
 * non-finite number (`finiteOnly`). `compileAll` compiles every schema handed out so far, so a
 * test can check them all.
 */
export function lazySchemaCompilers(): {
  compilersFactory: { buildValidator: ValidatorFactory; buildSerializer: SerializerFactory }
  compileAll: () => void
} {
  const pending = new Set<() => unknown>()
  // Fastify calls a factory with its shared schemas and options, then the result per route schema
  const lazyFactory =
    (factory: (externalSchemas: never, options: never) => (route: unknown) => unknown, wrap?: (c: Compiled, route: unknown) => Compiled) =>
    (externalSchemas: never, options: never) => {
      const compile = factory(externalSchemas, options)
      return (route: unknown) =>
        lazyCompiled(() => {
          const c = compile(route) as Compiled
          return wrap ? wrap(c, route) : c
        }, pending)
    }
  return {
    compilersFactory: {
      buildValidator: lazyFactory(ValidatorSelector() as never, (c, route) =>
        finiteOnly(c, (route as { schema?: unknown }).schema),
      ) as unknown as ValidatorFactory,
      buildSerializer: lazyFactory(SerializerSelector() as never) as unknown as SerializerFactory,
    },
    compileAll: () => {
      for (const get of [...pending]) get()
    },
  }
}

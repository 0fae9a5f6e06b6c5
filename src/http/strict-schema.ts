import { Ajv } from 'ajv'
import type { FastifySchemaCompiler } from 'fastify'
import { lazyCompiled, type Compiled } from './lazy-schemas.js'

/**
 * Validators for routes whose input must arrive exactly as sent: Fastify's shared AJV coerces
 * ("1" -> 1, 0 -> null, true -> "true"), fills defaults and drops unknown properties; this one
 * does none of that, so the documented schema is checked as written. A failure is Fastify's
 * validation error, answered 400 / 1106 like every other (http/errors.ts). Compiled on first use.
 */
const ajv = new Ajv({ coerceTypes: false, useDefaults: false, removeAdditional: false, allErrors: false, strict: false })

/** Strict validators not compiled yet (one per route schema; emptied as they compile). */
const pending = new Set<() => unknown>()

export const strictValidator: FastifySchemaCompiler<unknown> = ({ schema }) =>
  lazyCompiled(() => ajv.compile(schema as object) as Compiled, pending) as ReturnType<FastifySchemaCompiler<unknown>>

/** Compiles every strict validator handed out so far (app.compileSchemas, for tests). */
export function compileStrictValidators(): void {
  for (const get of [...pending]) get()
}

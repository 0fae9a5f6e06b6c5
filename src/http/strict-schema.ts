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

export const strictValidator: FastifySchemaCompiler<unknown> = ({ schema }) =>
  lazyCompiled(() => ajv.compile(schema as object) as Compiled) as ReturnType<FastifySchemaCompiler<unknown>>

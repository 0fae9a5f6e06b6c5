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

/**
 * Fastify's own schema compilers (AJV for input, fast-json-stringify for answers), each route
 * schema compiled on its first use instead of while the server starts: a start compiled every
 * route's schemas, most of which a given process never uses (a CLI test's server, a restart
 * after a crash). What is compiled, and how, is unchanged. `compileAll` compiles every schema
 * handed out so far, so a test can check them all.
 */
export function lazySchemaCompilers(): {
  compilersFactory: { buildValidator: ValidatorFactory; buildSerializer: SerializerFactory }
  compileAll: () => void
} {
  const pending = new Set<() => unknown>()
  // Fastify calls a factory with its shared schemas and options, then the result per route schema
  const lazyFactory = (factory: (externalSchemas: never, options: never) => (route: unknown) => unknown) => (externalSchemas: never, options: never) => {
    const compile = factory(externalSchemas, options)
    return (route: unknown) => lazyCompiled(() => compile(route) as Compiled, pending)
  }
  return {
    compilersFactory: {
      buildValidator: lazyFactory(ValidatorSelector() as never) as unknown as ValidatorFactory,
      buildSerializer: lazyFactory(SerializerSelector() as never) as unknown as SerializerFactory,
    },
    compileAll: () => {
      for (const get of [...pending]) get()
    },
  }
}

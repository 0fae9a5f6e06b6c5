/**
 * One instance per factory within one context (the app's Deps): a service that keeps a cache,
 * a bus subscription or a line of write rounds is built once, on first use, and every feature
 * that asks for it gets that instance. The instances live in the scope (compose.ts makes one per
 * Deps), never in module scope, so two sets of deps in one process share nothing.
 *
 * A factory is its identity: ask with the same function everywhere (the service module's own
 * `createX`). A factory that asks, while it builds, for itself throws: a cycle between services.
 */
export interface Scope<C> {
  get<T>(factory: (ctx: C) => T): T
}

/** A scope over `ctx()` (a thunk, so the context can hold its own scope). */
export function createScope<C>(ctx: () => C): Scope<C> {
  const made = new Map<(ctx: C) => unknown, unknown>()
  const building = new Set<(ctx: C) => unknown>()
  return {
    get<T>(factory: (ctx: C) => T): T {
      if (made.has(factory)) return made.get(factory) as T
      if (building.has(factory)) throw new Error(`service ${factory.name || '(anonymous)'} asks for itself while it is built`)
      building.add(factory)
      try {
        const value = factory(ctx())
        made.set(factory, value)
        return value
      } finally {
        building.delete(factory)
      }
    },
  }
}

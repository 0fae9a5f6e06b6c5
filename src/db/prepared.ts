import { CompiledQuery, type Compilable } from 'kysely'
import type { Db } from './kysely.js'

/** Stands for argument `i` while a prepared query is built: a value no caller passes. */
const mark = (i: number) => `\u0000svc-arg-${i}\u0000`

/**
 * A query of fixed shape on the request paths, built and compiled by Kysely once, on its
 * first call; every call then binds its own arguments into a copy of the compiled
 * parameters and runs the same SQL. Building and compiling was a fifth of a KV write's CPU.
 *
 * Invariant: `build` only places its arguments as values (Kysely parameters), never in the
 * shape of the query (no branching on them, no `sql.raw`, no arithmetic); the first call
 * throws when an argument does not come out as a parameter. A query whose shape varies is
 * one prepared query per shape. `arity`: how many leading arguments the query uses. Runs on
 * `db.k` (not inside a transaction). On PostgreSQL the SQL runs as a named statement
 * (`db.prepare`): the server parses and plans it once per connection.
 */
export function prepared<A extends unknown[], O>(db: Db, arity: number, build: (...args: A) => Compilable<O>): (...args: A) => Promise<O[]> {
  let plan: { sql: string; parameters: readonly unknown[]; slots: Array<[at: number, arg: number]> } | null = null
  return async (...args: A): Promise<O[]> => {
    if (plan === null) {
      const marks = Array.from({ length: arity }, (_, i) => mark(i))
      const q = build(...(marks as A)).compile()
      const slots: Array<[number, number]> = []
      q.parameters.forEach((p, at) => {
        const arg = typeof p === 'string' ? marks.indexOf(p) : -1
        if (arg >= 0) slots.push([at, arg])
      })
      for (let i = 0; i < arity; i++) if (!slots.some(([, arg]) => arg === i)) throw new Error(`prepared query: argument ${i} is not a parameter of ${q.sql}`)
      plan = { sql: q.sql, parameters: q.parameters, slots }
      db.prepare?.(plan.sql)
    }
    const parameters = plan.parameters.slice()
    for (const [at, arg] of plan.slots) parameters[at] = args[arg]
    return (await db.k.executeQuery<O>(CompiledQuery.raw(plan.sql, parameters))).rows
  }
}

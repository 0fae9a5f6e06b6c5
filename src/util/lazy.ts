import { createRequire } from 'node:module'

/**
 * A value made on its first use and shared afterwards: for packages that cost a start-up
 * (sharp, the MCP SDK, nodemailer, pg, ioredis) and that a process may never need. A failed
 * load stays failed: a missing or broken package does not appear later.
 */
export function lazy<T>(load: () => Promise<T>): () => Promise<T> {
  let value: Promise<T> | undefined
  return () => (value ??= load())
}

const require = createRequire(import.meta.url)

/**
 * A CommonJS package (ioredis) loaded synchronously on the first call, for code that builds
 * its client in a synchronous function.
 */
export function lazyRequire<T>(name: string): () => T {
  let mod: T | undefined
  return () => (mod ??= require(name) as T)
}

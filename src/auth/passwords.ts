import { hash, verify, type Algorithm } from '@node-rs/argon2'
import { MAX_PASSWORD_BYTES } from './account-rules.js'

// Algorithm is an ambient const enum, which verbatimModuleSyntax (one file at a time) cannot
// inline: its value, checked against the enum member's type
const ARGON2ID: Algorithm.Argon2id = 2

/** OWASP parameters: Argon2id, m = 19 MiB, t = 2, p = 1 (stored as a PHC string). */
const PARAMS = { algorithm: ARGON2ID, memoryCost: 19456, timeCost: 2, parallelism: 1 } as const

// bound concurrent hashing so a login burst cannot exhaust memory (19 MiB each)
let running = 0
const waiting: Array<() => void> = []
async function withSlot<T>(fn: () => Promise<T>): Promise<T> {
  if (running >= 4) await new Promise<void>((r) => waiting.push(r))
  running++
  try {
    return await fn()
  } finally {
    running--
    waiting.shift()?.()
  }
}

export function hashPassword(password: string): Promise<string> {
  return withSlot(() => hash(password, PARAMS))
}

/** A valid hash of a random password, verified against for unknown users so timing matches. */
let dummy: Promise<string> | null = null
export function dummyHash(): Promise<string> {
  dummy ??= hashPassword(`dummy-${Math.random()}`)
  return dummy
}

export async function verifyPassword(phc: string, password: string): Promise<boolean> {
  if (Buffer.byteLength(password) > MAX_PASSWORD_BYTES) return false
  try {
    return await withSlot(() => verify(phc, password))
  } catch {
    return false
  }
}

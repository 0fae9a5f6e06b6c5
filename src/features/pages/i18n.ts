import type { FastifyRequest } from 'fastify'
import { langOf, type Lang } from '../../errors/render.js'
import { readCookie } from '../../http/csrf.js'
import { fill, SHARED_MESSAGES, type MessageTables, type SharedKey, type Translator } from '../../web/messages.js'
import { SHELL_MESSAGES, type ShellKey } from './messages.js'

/** The keys the shell's own pages (frame, sign-up, login, logout, dashboard) use. */
export type MsgKey = ShellKey | SharedKey

/** One language's texts of every page: the shell's, each feature's and the shared ones. */
export type Messages = Readonly<Record<string, string>>

/**
 * Merges the shell's, the features' and the shared tables into one per language (the server's
 * translator and the JSON the scripts get). A key defined twice is a programming error.
 */
export function mergeMessages(features: MessageTables[]): Record<Lang, Messages> {
  const out: Record<Lang, Record<string, string>> = { en: {}, zh: {} }
  for (const tables of [SHELL_MESSAGES, ...features, SHARED_MESSAGES]) {
    for (const lang of ['en', 'zh'] as const) {
      for (const [key, text] of Object.entries(tables[lang])) {
        if (Object.hasOwn(out[lang], key)) throw new Error(`pages: message ${key} is defined twice`)
        out[lang][key] = text
      }
    }
  }
  return out
}

/** A translator for one language's merged table; a key it lacks (own keys only) reads as itself. */
export function translator(table: Messages): Translator {
  return (key, params) => fill(Object.hasOwn(table, key) ? table[key] : key, params)
}

export const LANG_COOKIE = 'lang'

/** The page language: the `lang` cookie (the switch), else Accept-Language (Chinese by default). */
export function pageLang(req: FastifyRequest): Lang {
  const c = readCookie(req.headers.cookie, LANG_COOKIE)
  if (c === 'en' || c === 'zh') return c
  return langOf(req)
}

import { ERRORS, type ErrorKey } from './codes.js'
import type { Param } from './text.js'

export interface AppErrorOptions {
  /** Values for the {placeholders} of the message and solution (words as a Text in both languages). */
  params?: Record<string, Param>
  /**
   * Extra top-level fields of a format A body (e.g. retry_after, details, errors). A member of
   * `details` that people read is a Text, sent in the answer's language (render.ts extraIn).
   */
  extra?: Record<string, unknown>
  /** Extra response headers (e.g. Retry-After). */
  headers?: Record<string, string>
  /** Overrides the table's HTTP status where a spec section asks for another one. */
  status?: number
  /** What failed underneath (a 5xx's dependency and its error): in the log line, never in the answer. */
  cause?: Error
}

/** The one error type services throw; rendered by http/error-handler.ts from the table. */
export class AppError extends Error {
  readonly key: ErrorKey
  readonly options: AppErrorOptions
  constructor(key: ErrorKey, options: AppErrorOptions = {}) {
    // a client's error (below 500) is an answer, not a fault: no stack trace is captured
    const limit = Error.stackTraceLimit
    if ((options.status ?? ERRORS[key].http) < 500) Error.stackTraceLimit = 0
    const { cause, ...rest } = options
    super(`${key} (${ERRORS[key].code})`, cause ? { cause } : undefined)
    Error.stackTraceLimit = limit
    this.key = key
    this.options = rest
  }
  get status(): number {
    return this.options.status ?? ERRORS[this.key].http
  }
}

export const isAppError = (e: unknown): e is AppError => e instanceof AppError

/**
 * A mistake in the command line or local setup: exit code 2. `parser`: the command line does
 * not fit the command (its parser refused an option or a value, an argument is missing, left
 * over or refused): the command's synopsis is printed after the message. Without it (the
 * environment, the config file): the message alone.
 */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly parser = false,
  ) {
    super(message)
  }
}

/** A local failure that is not the server's answer (unreadable file, too large, ...): exit code 1. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message)
  }
}

/**
 * An error answer of the server, in any of its formats: A ({error_code: number, error_type,
 * message, solution}), B ({error_code: string, message}) or plain ({success:false, message}).
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: number | string | undefined,
    readonly type: string | undefined,
    message: string,
    readonly solution: string | undefined,
    readonly body: unknown,
    readonly retryAfter?: number,
  ) {
    super(message)
  }

  /**
   * Builds an ApiError from a response status and its (possibly non-JSON) body. `where` names
   * the request and the server, for an answer that is not JSON (a proxy's error page).
   */
  static from(
    status: number,
    body: unknown,
    text: string,
    headers: Record<string, string | string[] | undefined>,
    where?: { request: string; server: string },
  ): ApiError {
    const b = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>
    const code = typeof b.error_code === 'number' || typeof b.error_code === 'string' ? b.error_code : undefined
    const type = typeof b.error_type === 'string' ? b.error_type : undefined
    let message = typeof b.message === 'string' ? b.message : typeof b.error === 'string' ? b.error : ''
    if (!message) {
      const loc = headers.location
      if (status >= 300 && status < 400) message = `the server answered with a redirect${loc ? ` to ${String(loc)}` : ''} (is the API key valid?)`
      else if (body === undefined && text.trim() !== '') message = notJsonMessage(status, headers, text, where)
      else message = `HTTP ${status}${text ? `: ${text.trim().slice(0, 200)}` : ''}`
    }
    const solution = typeof b.solution === 'string' ? b.solution : undefined
    return new ApiError(status, code, type, message, solution, body, retryAfterOf(b, headers))
  }

  /** One line for people: `error 1204 (QUOTA_ERROR, HTTP 429): message`. */
  describe(): string {
    const tags = [this.type, `HTTP ${this.status}`].filter(Boolean).join(', ')
    const head = this.code !== undefined ? `error ${this.code} (${tags})` : `error (${tags})`
    return `${head}: ${this.message}${this.solution ? `\n  ${this.solution}` : ''}`
  }

  toJSON() {
    return { status: this.status, error_code: this.code ?? null, error_type: this.type ?? null, message: this.message, solution: this.solution ?? null }
  }
}

/** Seconds to wait from a 429: the body's retry_after, else the Retry-After header (seconds or a date). */
export function retryAfterOf(body: Record<string, unknown>, headers: Record<string, string | string[] | undefined>): number | undefined {
  if (typeof body.retry_after === 'number' && Number.isFinite(body.retry_after) && body.retry_after >= 0) return body.retry_after
  const h = headers['retry-after']
  const v = Array.isArray(h) ? h[0] : h
  if (!v) return undefined
  if (/^\d+(\.\d+)?$/.test(v.trim())) return Number(v.trim())
  const at = Date.parse(v)
  return Number.isNaN(at) ? undefined : Math.max(0, (at - Date.now()) / 1000)
}

/** The title (else first heading, else text) of an HTML page, one short line. */
function pageSummary(text: string): string {
  const pick = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(text)?.[1] ?? /<h1[^>]*>([\s\S]*?)<\/h1>/i.exec(text)?.[1] ?? text
  const plain = pick
    .replace(/<[^>]*>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
  return plain.length > 120 ? `${plain.slice(0, 119)}…` : plain
}

/**
 * An error answer that is not JSON: every svc answer is, so it comes from something else at
 * that address (a proxy's error page, another website). Named as such, with the page's title
 * instead of its markup; a 413 names the usual cause, a proxy's own body limit.
 */
function notJsonMessage(
  status: number,
  headers: Record<string, string | string[] | undefined>,
  text: string,
  where?: { request: string; server: string },
): string {
  const ct =
    String(headers['content-type'] ?? '')
      .split(';')[0]
      .trim() || 'no content type'
  const summary = pageSummary(text)
  const who = where ? `${where.request} answered` : 'the server answered'
  const hint =
    status === 413
      ? 'a proxy in front of the server may limit the size of request bodies (nginx: client_max_body_size)'
      : status >= 502 && status <= 504
        ? `a proxy's page: is the svc server behind it running?`
        : `a proxy's or another server's page: is ${where?.server ?? 'the URL'} the address of an svc server?`
  return `${who} HTTP ${status} with ${ct}, not JSON${summary ? ` ("${summary}")` : ''}; ${hint}`
}

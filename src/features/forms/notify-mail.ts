import { escapeHtml } from '../../util/html.js'
import { lazy } from '../../util/lazy.js'
import type { EventFile, SubmissionEvent } from './notify-store.js'
import { truncate } from '../../util/unicode.js'
import { isEmailAddress, REPLY_TO } from './fields.js'
import type { Text } from '../../errors/text.js'

export interface MailMessage {
  to: string
  subject: string
  text: string
  html?: string
  /** The address a reply goes to (the visitor's), when the mail is about one submission that gave one. */
  replyTo?: string
}

/** Sends one mail; rejects when the SMTP server refuses it or cannot be reached. */
export interface Mailer {
  send(m: MailMessage): Promise<void>
  close(): void
}

/** A mail the SMTP server did not take within SMTP_TIMEOUT. */
export class MailTimeout extends Error {
  constructor(
    readonly seconds: number,
    cause: unknown,
  ) {
    super(`the SMTP server did not take the mail within ${seconds} s`, { cause })
  }
}

/**
 * The SMTP mailer of SMTP_URL (nodemailer), or null when the service has no mail server. Each
 * mail takes at most `timeoutMs` (SMTP_TIMEOUT), connection to the server's last answer:
 * nodemailer's own limits (2 min to connect, 10 min of silence) let a stalled server hold a
 * verification request, and the outbox worker with every other delivery, for minutes.
 */
export function createMailer(smtpUrl: string | null, from: string, timeoutMs: number): Mailer | null {
  if (smtpUrl === null) return null
  // nodemailer is loaded with the first mail
  let made: { close(): void } | null = null
  const transport = lazy(async () => {
    const { default: nodemailer } = await import('nodemailer')
    const t = nodemailer.createTransport({ url: smtpUrl, connectionTimeout: timeoutMs, greetingTimeout: timeoutMs, socketTimeout: timeoutMs })
    made = t
    return t
  })
  return {
    async send(m) {
      // the signal closes the connection at the deadline, however the server trickles
      const signal = AbortSignal.timeout(timeoutMs)
      try {
        await (await transport()).sendMail({ from, to: m.to, replyTo: m.replyTo, subject: m.subject, text: m.text, html: m.html, signal })
      } catch (e) {
        if (signal.aborted) throw new MailTimeout(timeoutMs / 1000, e)
        throw e
      }
    },
    close: () => made?.close(),
  }
}

/** Codes of nodemailer's errors before the server answered: it could not be reached or spoken to. */
const UNREACHED = new Set(['ECONNECTION', 'ETIMEDOUT', 'ESOCKET', 'EDNS', 'ECONNREFUSED', 'ECONNRESET', 'ETLS', 'EAUTH', 'EENVELOPE'])

/**
 * Why a mail was not sent, in both languages (the detail of 1429): the English is the
 * mailer's message as it was; the Chinese says what happened, with the server's reply code
 * or the error's code, since the server's own words are English.
 */
export function mailFailure(e: unknown): Text {
  const { message, code, responseCode } = (e ?? {}) as { message?: unknown; code?: unknown; responseCode?: unknown }
  const en = String(message ?? e).slice(0, 200)
  if (e instanceof MailTimeout) return { zh: `邮件服务器未在 ${e.seconds} 秒内接收邮件`, en }
  if (typeof responseCode === 'number') return { zh: `邮件服务器拒绝了邮件（响应码 ${responseCode}）`, en }
  if (typeof code === 'string' && UNREACHED.has(code)) return { zh: `无法与邮件服务器通信（${code}）`, en }
  return { zh: '邮件服务器出错', en }
}

const show = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v))
// a header line may not carry line breaks (Unicode's own included), and long names are cut
const oneLine = (s: string) => truncate(s.replace(/[\r\n\u0000-\u001f\u007f\u0085\u2028\u2029]+/g, ' '), 120)
// a value's line breaks in the text part, Unicode's own (NEL, U+2028, U+2029) and vertical
// tab and form feed too: its later lines indented under its name
const indented = (s: string) => s.replace(/\r\n|[\r\n\u000b\u000c\u0085\u2028\u2029]/g, '\n  ')

/**
 * The visitor's address of a submission, for Reply-To (as Formspree sets it): its `_replyto`,
 * else its `email` field, when that is one well-formed address; else none.
 */
function replyAddress(data: Record<string, unknown>): string | undefined {
  for (const name of [REPLY_TO, 'email']) {
    const v = Object.hasOwn(data, name) ? data[name] : undefined
    if (typeof v === 'string' && isEmailAddress(v.trim())) return v.trim()
  }
  return undefined
}

/**
 * The mail of one or more submissions: plain text, and HTML where every field name and value
 * is escaped (a visitor's input never becomes markup in the owner's mail client) and keeps its
 * line breaks. A mail of one submission replies to its visitor (replyAddress) and takes the
 * subject the post asked for (`_subject`), on one line like every header (decision 205). In
 * the text, a value's later lines are indented under its name, so no line a visitor types
 * reads as a field or a submission of its own.
 */
export function submissionMail(events: SubmissionEvent[]): { subject: string; text: string; html: string; replyTo?: string } {
  const form = events[0].form
  const asked = events.length === 1 ? events[0].subject : undefined
  const subject = oneLine(asked ?? (events.length === 1 ? `New submission to ${form.name}` : `${events.length} new submissions to ${form.name}`))
  // a file is named with its field, type and size; its bytes are the owner's download, linked
  // when the link is absolute (a path means nothing in a mail; events queued before files had
  // links have none)
  const fileLine = (f: EventFile) => `${f.filename} (${f.content_type}, ${f.size} bytes)`
  const link = (f: EventFile) => (/^https?:\/\//.test(f.url ?? '') ? f.url : null)
  const text = events
    .map((e) =>
      [
        `Submission ${e.submission.id} (${e.submission.created_at})`,
        ...Object.entries(e.submission.data).map(([k, v]) => `${k}: ${indented(show(v))}`),
        ...(e.submission.files ?? []).map((f) => `${f.field} (file): ${fileLine(f)}${link(f) ? `\n  ${link(f)}` : ''}`),
      ].join('\n'),
    )
    .join('\n\n')
  const html = events
    .map(
      (e) =>
        `<h3>Submission ${escapeHtml(e.submission.id)} <small>${escapeHtml(e.submission.created_at)}</small></h3><table>${Object.entries(e.submission.data)
          .map(([k, v]) => `<tr><th align="left" valign="top">${escapeHtml(k)}</th><td style="white-space:pre-wrap">${escapeHtml(show(v))}</td></tr>`)
          .join('')}${(e.submission.files ?? [])
          .map((f) => {
            const url = link(f)
            const name = url ? `<a href="${escapeHtml(url)}">${escapeHtml(fileLine(f))}</a>` : escapeHtml(fileLine(f))
            return `<tr><th align="left" valign="top">${escapeHtml(f.field)} (file)</th><td>${name}</td></tr>`
          })
          .join('')}</table>`,
    )
    .join('<hr>')
  const replyTo = events.length === 1 ? replyAddress(events[0].submission.data) : undefined
  return {
    subject,
    replyTo,
    text: `Form: ${form.name}\n\n${text}\n`,
    html: `<!doctype html><meta charset="utf-8"><p>Form: ${escapeHtml(form.name)}</p>${html}`,
  }
}

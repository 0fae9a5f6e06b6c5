import type { AddressInfo } from 'node:net'
import { SMTPServer } from 'smtp-server'

export interface Mail {
  to: string[]
  raw: string
}

/**
 * An SMTP server on loopback (smtp-server) that keeps every mail it receives. `failNext`
 * mails are refused first (a 451 after DATA, as a server with a full queue answers);
 * `stallNext` mails are read and never answered (a server that hangs after DATA).
 */
export async function smtpSink(o: { failNext?: number; stallNext?: number } = {}) {
  const mails: Mail[] = []
  const state = { failNext: o.failNext ?? 0, refused: 0, stallNext: o.stallNext ?? 0, stalled: 0 }
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, done) {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      stream.on('end', () => {
        if (state.stallNext > 0) {
          state.stallNext--
          state.stalled++
          return
        }
        if (state.failNext > 0) {
          state.failNext--
          state.refused++
          const err = Object.assign(new Error('try again later'), { responseCode: 451 })
          done(err)
          return
        }
        mails.push({ to: session.envelope.rcptTo.map((r) => r.address), raw: Buffer.concat(chunks).toString('utf8') })
        done()
      })
    },
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const port = (server.server.address() as AddressInfo).port
  return { mails, state, url: `smtp://127.0.0.1:${port}`, close: () => new Promise<void>((r) => server.close(() => r())) }
}

/** The decoded body of a quoted-printable mail (nodemailer's encoding of text parts). */
export const decodeQp = (s: string) => s.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)))

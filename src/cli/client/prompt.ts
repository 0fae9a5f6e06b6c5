/**
 * Asks for a secret on the terminal without echoing it. Returns undefined when stdin is not
 * a terminal (scripts must use --password-stdin, --key-stdin or the environment).
 */
export async function readSecret(question: string): Promise<string | undefined> {
  const input = process.stdin
  if (!input.isTTY) return undefined
  process.stderr.write(question)
  input.setRawMode(true)
  input.resume()
  input.setEncoding('utf8')
  return new Promise((resolve, reject) => {
    let value = ''
    const done = (v: string | undefined, err?: Error) => {
      input.setRawMode(false)
      input.pause()
      input.removeListener('data', onData)
      process.stderr.write('\n')
      if (err) reject(err)
      else resolve(v)
    }
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n') return done(value)
        if (ch === '\u0003') return done(undefined, new Error('cancelled'))
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1)
        else if (ch >= ' ') value += ch
      }
    }
    input.on('data', onData)
  })
}

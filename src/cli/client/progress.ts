/** Human sizes: 1.5 kB, 20.0 MB (decimal units). */
export function formatBytes(n: number): string {
  if (n < 1000) return `${n} B`
  const units = ['kB', 'MB', 'GB', 'TB']
  let v = n
  let i = -1
  do {
    v /= 1000
    i++
  } while (v >= 1000 && i < units.length - 1)
  return `${v.toFixed(1)} ${units[i]}`
}

/**
 * Writes progress to stderr: on a terminal, one line redrawn in place with \r; otherwise
 * (CI logs, pipes) an occasional plain line. Messages printed through `note` clear the line
 * first, so waits and warnings do not mix with the bar.
 */
export class Reporter {
  private lineShown = false
  private lastPlain = Date.now()
  private label = ''
  private printed = false
  private lastDraw = 0
  readonly tty: boolean

  constructor(
    private readonly quiet = false,
    private readonly stream: NodeJS.WriteStream = process.stderr,
  ) {
    this.tty = Boolean(stream.isTTY) && !process.env.CI
  }

  /** A message on its own line (never suppressed: warnings and waits matter in CI too). */
  note(message: string): void {
    this.clear()
    this.stream.write(`${message}\n`)
  }

  /** Redraws the progress line (tty) or prints a line every 2 seconds (plain). */
  progress(label: string, done: number, total: number, extra = '', force = false): void {
    if (this.quiet) return
    if (this.tty) {
      // redraw at most 10 times a second, and always at the end
      const t = Date.now()
      if (!force && done !== total && t - this.lastDraw < 100) return
      this.lastDraw = t
      const width = 24
      const frac = total > 0 ? Math.min(1, done / total) : 1
      const filled = Math.round(frac * width)
      const bar = `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`
      const line = `${label} ${bar} ${done}/${total}${extra ? `  ${extra}` : ''}`
      const cols = this.stream.columns || 100
      this.stream.write(`\r${line.slice(0, cols - 1)}\x1b[K`)
      this.lineShown = true
      return
    }
    // plain output: nothing for quick steps; a line every 2 s for slow ones, and their end
    const now = Date.now()
    if (label !== this.label) {
      this.label = label
      this.printed = false
      this.lastPlain = now
    }
    if (force || now - this.lastPlain >= 2000 || (done === total && this.printed)) {
      this.lastPlain = now
      this.printed = done !== total
      this.stream.write(`${label} ${done}/${total}${extra ? `  ${extra}` : ''}\n`)
    }
  }

  /** Ends the progress line. */
  clear(): void {
    if (this.lineShown) {
      this.stream.write('\r\x1b[K')
      this.lineShown = false
    }
  }
}

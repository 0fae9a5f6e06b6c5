/**
 * Group commit in user space. Calls on one line (a hot key, an API key hash, every overwrite)
 * that arrive while a round of that line runs wait; when it ends, `take` picks the next round
 * from them (their indices; all of them by default), and `run` serves the whole round in one
 * database statement.
 *
 * Invariant: a round starts after each of its calls arrived, so it sees every write committed
 * before any of them was made, as a call running alone would: a waiter never joins a round
 * already running. `run` answers each item of the round, in order, with a value or an Error
 * (that item alone fails); a throw fails the whole round. A line with nothing running starts
 * its round at once, so a lone call waits for nothing.
 */
export function rounds<T, R>(
  run: (round: T[]) => Promise<Array<R | Error>>,
  take: (waiting: readonly T[]) => number[] = (waiting) => waiting.map((_, i) => i),
): (line: string, item: T) => Promise<R> {
  type Waiter = { item: T; resolve: (r: R) => void; reject: (e: unknown) => void }
  // lines with a round running, and the calls waiting for their next round
  const lines = new Map<string, Waiter[]>()

  async function drive(line: string, round: Waiter[]): Promise<void> {
    while (round.length > 0) {
      try {
        const out = await run(round.map((w) => w.item))
        round.forEach((w, i) => {
          const r = out[i]
          if (r instanceof Error) w.reject(r)
          else w.resolve(r)
        })
      } catch (e) {
        for (const w of round) w.reject(e)
      }
      const waiting = lines.get(line)!
      if (waiting.length === 0) break
      // the first waiter always goes, so every waiter is served in a bounded number of rounds
      const picked = new Set(take(waiting.map((w) => w.item)).concat(0))
      round = waiting.filter((_, i) => picked.has(i))
      lines.set(
        line,
        waiting.filter((_, i) => !picked.has(i)),
      )
    }
    lines.delete(line)
  }

  return (line, item) =>
    new Promise<R>((resolve, reject) => {
      const waiting = lines.get(line)
      if (waiting) return void waiting.push({ item, resolve, reject })
      lines.set(line, [])
      void drive(line, [{ item, resolve, reject }])
    })
}

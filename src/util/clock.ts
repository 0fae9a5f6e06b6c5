/** Time source, injected everywhere so tests can move time without waiting. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number
}

export const systemClock: Clock = { now: () => Date.now() }

/** A clock tests can set and advance. */
export class FakeClock implements Clock {
  constructor(private t: number = Date.UTC(2026, 0, 15, 4, 0, 0)) {}
  now(): number {
    return this.t
  }
  set(ms: number): void {
    this.t = ms
  }
  advance(ms: number): void {
    this.t += ms
  }
}

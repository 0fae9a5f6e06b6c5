import type { Clock } from '../../src/util/clock.js'

/**
 * The real time plus an offset a test moves forward: timers, sockets and polling keep running
 * in real time while a period the service reads from its clock (a digest's, a window's) ends
 * at once, without the test waiting for it.
 */
export class SkipClock implements Clock {
  private offset = 0
  now(): number {
    return Date.now() + this.offset
  }
  /** Moves the clock `ms` ahead. */
  skip(ms: number): void {
    this.offset += ms
  }
  /** Moves the clock to the start of the next period of `ms` (aligned on the epoch, as the service aligns them). */
  toNextPeriod(ms: number): void {
    this.skip(ms - (this.now() % ms))
  }
}

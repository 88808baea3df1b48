import type { EventHub } from './events.js'

/** Seconds of history the dashboard's chart shows. */
export const HISTORY_SECONDS = 300

/**
 * Grants per second over the last HISTORY_SECONDS, kept by the server itself
 * (a ring of counters fed by the event hub), so a dashboard opened now draws
 * the minutes before it too, not zeros.
 */
export class GrantHistory {
  private readonly grants = new Float64Array(HISTORY_SECONDS)
  private readonly waited = new Float64Array(HISTORY_SECONDS)
  /** The epoch second each slot counts. */
  private readonly second = new Float64Array(HISTORY_SECONDS)
  private readonly stop: () => void

  constructor(hub: EventHub, private readonly now: () => number = Date.now) {
    this.stop = hub.count((type, _kind, waitedMs) => {
      if (type === 'grant') this.add(waitedMs ?? 0)
    })
  }

  private add(waitedMs: number): void {
    const second = Math.floor(this.now() / 1000)
    const slot = second % HISTORY_SECONDS
    if (this.second[slot] !== second) {
      this.second[slot] = second
      this.grants[slot] = 0
      this.waited[slot] = 0
    }
    this.grants[slot]! += 1
    this.waited[slot]! += waitedMs
  }

  /** The last HISTORY_SECONDS whole seconds, oldest first; seconds without grants are left out. */
  recent(): { at: number; grants: number; waitedMs: number }[] {
    const current = Math.floor(this.now() / 1000)
    const out: { at: number; grants: number; waitedMs: number }[] = []
    for (let second = current - HISTORY_SECONDS + 1; second <= current; second++) {
      const slot = second % HISTORY_SECONDS
      if (this.second[slot] === second && this.grants[slot]! > 0) {
        out.push({ at: second * 1000, grants: this.grants[slot]!, waitedMs: Math.round(this.waited[slot]!) })
      }
    }
    return out
  }

  close(): void {
    this.stop()
  }
}

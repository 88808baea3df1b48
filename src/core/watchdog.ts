import { monotonicNow } from './clock.js'
import { channels, type RenewFailedEvent } from './events.js'
import type { Hold } from './lease.js'
import { safetyMarginMs } from './margin.js'

/**
 * One renewal loop per client. Every auto-extended hold is renewed about every
 * ttl/3 from its last confirmed renewal; holds that fall due together go to
 * the driver as one batch. A renewal that fails for a transport reason is
 * retried soon (ttl/10) until the hold's loss timer (set by Hold.confirm)
 * declares it lost; the store saying "not yours" loses it at once.
 */
export class Watchdog {
  private readonly holds = new Set<Hold>()
  private readonly retryAt = new Map<Hold, number>()
  private timer: NodeJS.Timeout | undefined
  private timerAt = Infinity

  add(hold: Hold): void {
    this.holds.add(hold)
    this.schedule()
  }

  remove(hold: Hold): void {
    this.holds.delete(hold)
    this.retryAt.delete(hold)
    if (this.holds.size === 0) this.cancel()
  }

  close(): void {
    this.holds.clear()
    this.cancel()
  }

  private dueAt(hold: Hold): number {
    return this.retryAt.get(hold) ?? hold.deadline - hold.ttlMs + hold.ttlMs / 3
  }

  private schedule(): void {
    let next = Infinity
    for (const hold of this.holds) if (!hold.renewing) next = Math.min(next, this.dueAt(hold))
    if (next >= this.timerAt && this.timer) return
    this.cancel()
    if (!Number.isFinite(next)) return
    this.timerAt = next
    this.timer = setTimeout(() => this.tick(), Math.max(0, next - monotonicNow()))
    this.timer.unref()
  }

  private cancel(): void {
    clearTimeout(this.timer)
    this.timer = undefined
    this.timerAt = Infinity
  }

  private tick(): void {
    this.timer = undefined
    this.timerAt = Infinity
    const now = monotonicNow()
    // Renew a little early rather than waking again a few ms later. A hold
    // past its deadline (this tick ran late: a pause) is lost, not renewed:
    // the store may have let it go and granted the name meanwhile.
    const due = [...this.holds].filter((h) => !h.renewing && this.dueAt(h) - now <= h.ttlMs / 12 && h.active)
    const byTtl = new Map<number, Hold[]>()
    for (const hold of due) {
      const group = byTtl.get(hold.ttlMs) ?? []
      group.push(hold)
      byTtl.set(hold.ttlMs, group)
    }
    for (const [ttlMs, group] of byTtl) this.renew(group, ttlMs)
    this.schedule()
  }

  private renew(group: Hold[], ttlMs: number): void {
    const sentAt = monotonicNow()
    const driver = group[0]!.driver
    const batch = driver.extend(group.map((h) => h.ref), ttlMs).then(
      (results) => {
        group.forEach((hold, i) => {
          this.retryAt.delete(hold)
          hold.applyExtend(results[i]!, sentAt, ttlMs)
        })
      },
      (error: unknown) => {
        // Transport failure: try again soon; the loss timer decides when to give up.
        const now = monotonicNow()
        const again = now + Math.max(1, Math.min(ttlMs / 10, safetyMarginMs(ttlMs)))
        for (const hold of group) {
          this.retryAt.set(hold, again)
          hold.renewalInDoubt = true
        }
        if (channels.renewFailed.hasSubscribers) {
          const failure = error instanceof Error ? error : new Error(String(error))
          for (const hold of group) {
            if (hold.state === 'held') channels.renewFailed.publish({ ...hold.event(), error: failure, remainingMs: Math.max(0, hold.deadline - safetyMarginMs(hold.ttlMs) - now) } satisfies RenewFailedEvent)
          }
        }
      },
    )
    for (const hold of group) hold.renewing = batch
    void batch.finally(() => {
      for (const hold of group) if (hold.renewing === batch) hold.renewing = undefined
      if (group.some((h) => this.holds.has(h))) this.schedule()
    })
  }
}

import { HttpError } from './http-errors.js'

export interface WaitCaps {
  /** Waiting acquire requests at once, all names together. */
  readonly total: number
  /** Waiting acquire requests at once for one name. */
  readonly perName: number
}

export const DEFAULT_WAIT_CAPS: WaitCaps = { total: 10_000, perName: 1_000 }

/**
 * Caps on long-polling acquires, so a flood of waiters can not exhaust the
 * server: over a cap, 429 with a Retry-After.
 */
export class WaitLimits {
  private count = 0
  private readonly byName = new Map<string, number>()

  constructor(private readonly caps: WaitCaps) {}

  get waiting(): number {
    return this.count
  }

  enter(name: string): void {
    const forName = this.byName.get(name) ?? 0
    if (this.count >= this.caps.total) {
      throw new HttpError('TOO_MANY_WAITERS', `this server already has ${this.caps.total} waiting requests; retry later or on another server`, 1)
    }
    if (forName >= this.caps.perName) {
      throw new HttpError('TOO_MANY_WAITERS', `"${name}" already has ${this.caps.perName} waiting requests on this server; retry later`, 1)
    }
    this.count += 1
    this.byName.set(name, forName + 1)
  }

  leave(name: string): void {
    this.count -= 1
    const forName = (this.byName.get(name) ?? 1) - 1
    if (forName === 0) this.byName.delete(name)
    else this.byName.set(name, forName)
  }
}

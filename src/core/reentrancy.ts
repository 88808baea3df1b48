import { AsyncLocalStorage } from 'node:async_hooks'

/**
 * Which holds the current async flow is inside of, and whose turn it is.
 *
 * A scope opens with `using(fn)` or `lease.run(fn)`: `fn` and everything it
 * awaits see the hold, so a nested acquire of the same lock re-enters it with
 * a count instead of waiting for itself. Flows outside the scope (the caller
 * after `fn` returns) contend like other clients. A bare `acquire()` opens no
 * scope on its own: AsyncLocalStorage's `enterWith` would leak the hold into
 * the *caller's* other flows (every task the caller starts afterwards would
 * "re-enter" a lock it does not hold), which is a mutual-exclusion bug, not a
 * convenience.
 *
 * Each re-entry is a turn, as a thread's hold under Redisson: flows started
 * inside one scope (Promise.all, timers) are siblings, not nested in each
 * other, so while one of them is inside its re-entry the others wait locally
 * for it; code nested inside the innermost re-entry re-enters at once.
 */
export interface ScopedHold {
  /** Set while the hold is alive; reentrant lookups ignore holds that ended. */
  readonly active: boolean
  readonly turns: Turns
}

/** One handle's place among the re-entries of a hold (the first handle's has no parent). */
export class Reentry {
  open = true
  constructor(readonly hold: ScopedHold, readonly parent: Reentry | undefined) {}
}

/** The open re-entries of one hold, innermost last. */
export class Turns {
  private readonly stack: Reentry[] = []
  /** Flows waiting for their turn; made on first use (most holds never see one). */
  private waiting: (() => void)[] | undefined

  enter(hold: ScopedHold, parent: Reentry | undefined): Reentry {
    const entry = new Reentry(hold, parent)
    this.stack.push(entry)
    return entry
  }

  leave(entry: Reentry): void {
    if (!entry.open) return
    entry.open = false
    if (this.stack[this.stack.length - 1] === entry) this.stack.pop()
    else this.stack.splice(this.stack.indexOf(entry), 1)
    this.wakeAll()
  }

  /** The open re-entry a flow whose scope is `scope` acts in: its own, or the nearest open one around it. */
  around(scope: Reentry): Reentry | undefined {
    let entry: Reentry | undefined = scope
    while (entry && !entry.open) entry = entry.parent
    return entry
  }

  /** May a flow acting in `entry` re-enter now (no sibling is inside)? */
  isInnermost(entry: Reentry): boolean {
    return this.stack[this.stack.length - 1] === entry
  }

  /** Resolves at the next leave (or when the hold ends). */
  changed(): { promise: Promise<void>; cancel(): void } {
    let wake!: () => void
    const promise = new Promise<void>((resolve) => { wake = resolve })
    ;(this.waiting ??= []).push(wake)
    return { promise, cancel: () => { this.waiting = this.waiting?.filter((w) => w !== wake) } }
  }

  wakeAll(): void {
    const waiting = this.waiting
    if (!waiting?.length) return
    this.waiting = undefined
    for (const wake of waiting) wake()
  }
}

type Frame = ReadonlyMap<string, Reentry>

const storage = new AsyncLocalStorage<Frame>()

/** Key of a lock in scopes: holds of another client never match. */
export function scopeKey(clientId: string, name: string): string {
  return `${clientId}\u0000${name}`
}

/** The re-entry scope this flow is in for this client's `name`, while its hold is alive. */
export function scopeInFlow(clientId: string, name: string): Reentry | undefined {
  const frame = storage.getStore()
  if (!frame) return undefined
  const scope = frame.get(scopeKey(clientId, name))
  return scope?.hold.active ? scope : undefined
}

/** Runs `fn` in a scope where `key` is held through `entry`. */
export function runHolding<R>(key: string, entry: Reentry, fn: () => R): R {
  const frame = new Map(storage.getStore())
  frame.set(key, entry)
  return storage.run(frame, fn)
}

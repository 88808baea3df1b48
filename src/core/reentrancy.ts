import { AsyncLocalStorage } from 'node:async_hooks'

/**
 * Which holds the current async flow is inside of.
 *
 * A scope opens with `using(fn)` or `lease.run(fn)`: `fn` and everything it
 * awaits see the hold, so a nested acquire of the same lock re-enters it with
 * a count instead of waiting for itself. Flows outside the scope (siblings
 * started with Promise.all, the caller after `fn` returns) contend like other
 * clients. A bare `acquire()` opens no scope on its own: AsyncLocalStorage's
 * `enterWith` would leak the hold into the *caller's* other flows (every task
 * the caller starts afterwards would "re-enter" a lock it does not hold),
 * which is a mutual-exclusion bug, not a convenience.
 */
export interface ScopedHold {
  /** Set while the hold is alive; reentrant lookups ignore holds that ended. */
  readonly active: boolean
}

type Frame = ReadonlyMap<string, ScopedHold>

const storage = new AsyncLocalStorage<Frame>()

/** Key of a lock in scopes: holds of another client never match. */
export function scopeKey(clientId: string, name: string): string {
  return `${clientId}\u0000${name}`
}

/** The live hold of this client on `name` in this flow, if any. */
export function heldInFlow<T extends ScopedHold>(clientId: string, name: string): T | undefined {
  const frame = storage.getStore()
  if (!frame) return undefined
  const hold = frame.get(scopeKey(clientId, name))
  return hold?.active ? (hold as T) : undefined
}

/** Runs `fn` in a scope where `key` is held by `hold`. */
export function runHolding<R>(key: string, hold: ScopedHold, fn: () => R): R {
  const frame = new Map(storage.getStore())
  frame.set(key, hold)
  return storage.run(frame, fn)
}

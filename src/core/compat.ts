import type { HoldMode, LockKind } from './driver.js'

/**
 * The grant predicate shared by stores that evaluate it in the client's
 * process (memory, and later SQL-side mirrors). Lua scripts state the same rule.
 *
 * - exclusive / write: only when nobody holds the name;
 * - read: when no writer holds it, and no writer waits (new readers do not
 *   starve a queued writer); readers already in line are admitted together;
 * - permit: while the weights of the holds (lock-delay phantoms included)
 *   plus the asked weight come to at most `permits` (LockSpec.weight).
 */
export function canJoin(held: readonly Held[], asked: Held, permits: number, writerWaiting: boolean): boolean {
  switch (asked.mode) {
    case 'exclusive':
    case 'write':
      return held.length === 0
    case 'read':
      return !writerWaiting && held.every((h) => h.mode === 'read')
    case 'permit': {
      let used = weightOf(asked)
      for (const h of held) used += weightOf(h)
      return used <= permits
    }
  }
}

/** A hold (or a lock-delay phantom, or a request) as canJoin counts it. */
export interface Held {
  readonly mode: HoldMode
  readonly weight?: number | undefined
}

/** LockSpec.weight with its default: 1. */
export function weightOf(spec: { readonly weight?: number | undefined }): number {
  return spec.weight ?? 1
}

/** HolderSummary / WaiterSummary's `weight`: shown for permits, left out elsewhere. */
export function weightField(mode: HoldMode, weight: number | undefined): { weight?: number } {
  return mode === 'permit' ? { weight: weight ?? 1 } : {}
}

/** Why a request can never share this name as asked, or undefined when it can. */
export function describeConflict(
  state: { kind: LockKind; permits: number },
  request: { name: string; kind: LockKind; permits: number },
): string | undefined {
  if (state.kind !== request.kind) {
    return `"${request.name}" is in use as a ${state.kind}, not a ${request.kind}; use another name or wait until it is free`
  }
  if (state.kind === 'semaphore' && state.permits !== request.permits) {
    return `semaphore "${request.name}" is in use with ${state.permits} permits, not ${request.permits}; a permit count can change only while nobody holds or waits for the name`
  }
  return undefined
}

import type { HoldMode, LockKind } from './driver.js'

/**
 * The grant predicate shared by stores that evaluate it in the client's
 * process (memory, and later SQL-side mirrors). Lua scripts state the same rule.
 *
 * - exclusive / write: only when nobody holds the name;
 * - read: when no writer holds it, and no writer waits (new readers do not
 *   starve a queued writer); readers already in line are admitted together;
 * - permit: while fewer than `permits` hold it.
 */
export function canJoin(held: readonly HoldMode[], mode: HoldMode, permits: number, writerWaiting: boolean): boolean {
  switch (mode) {
    case 'exclusive':
    case 'write':
      return held.length === 0
    case 'read':
      return !writerWaiting && held.every((m) => m === 'read')
    case 'permit':
      return held.length < permits
  }
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

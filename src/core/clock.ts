import { performance } from 'node:perf_hooks'

/** Monotonic milliseconds: for elapsed time and lease deadlines, never wall clock. */
export const monotonicNow = (): number => performance.now()

/**
 * How often the loop-turn probe runs. An answer read from a socket arrived
 * no earlier than the loop's previous look at that socket, which is at most
 * about this long before the probe's last turn.
 */
const PROBE_MS = 20
/** A probe turn this late means the loop (or the whole process) stood still. */
const STALL_MS = PROBE_MS * 3
/** Answers that waited in sockets through a stall are all read within this long after it. */
const AFTER_STALL_MS = 500
let lastTurn = -Infinity
let stallStart = -Infinity
let stallEnd = -Infinity
let probe: NodeJS.Timeout | undefined

function turn(): void {
  const now = monotonicNow()
  if (now - lastTurn > STALL_MS) {
    // A stall soon after another (a resumed process on a busy machine) is the
    // same one going on: answers held through the first may still be unread.
    if (!sameStall(lastTurn)) stallStart = lastTurn
    stallEnd = now
  }
  lastTurn = now
}

/** Whether a stall beginning at `start` continues the last one seen (closer to its end than AFTER_STALL_MS). */
const sameStall = (start: number): boolean => start - stallEnd < AFTER_STALL_MS

/**
 * Starts the loop-turn probe (once per process). Call it before sending a
 * request whose answer will go through `earliestArrival()`: a stall can only
 * be seen if the probe was already running when it began, so starting it at
 * the first answer leaves a process's first grant unprotected.
 */
export function watchForStalls(): void {
  if (probe !== undefined) return
  probe = setInterval(turn, PROBE_MS)
  probe.unref()
  lastTurn = monotonicNow()
}

/**
 * The earliest moment an answer being handled now can have arrived, for
 * answers whose request time says nothing useful (a long-poll that waited
 * for seconds). Normally that is a few ms ago. After an event-loop stall (a
 * long GC, a SIGSTOP, a blocking call) the answer may have sat in the socket
 * for the whole stall, and a lease counted from "now" would outlive the
 * store's: then this is the last moment before the stall. Whether node reads
 * the sockets or runs the overdue probe first after a stall, one of the two
 * branches below sees it.
 */
export function earliestArrival(): number {
  const now = monotonicNow()
  if (probe === undefined) {
    // Nothing watched the loop before this answer: too late to see a stall it sat through.
    watchForStalls()
    return now
  }
  // The probe is overdue: this is the first turn after a stall it has not seen yet.
  if (now - lastTurn > STALL_MS) return (sameStall(lastTurn) ? stallStart : lastTurn) - PROBE_MS
  // The probe saw a stall a moment ago: answers read now may be from before it.
  if (now - stallEnd < AFTER_STALL_MS) return stallStart - PROBE_MS
  return Math.min(now, lastTurn - PROBE_MS)
}

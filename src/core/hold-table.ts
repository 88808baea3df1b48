import type { HoldMode } from './driver.js'
import { canJoin, type Held } from './compat.js'

/**
 * The grant rules of a store that keeps a name's holds and line as rows and
 * decides in the client, inside a transaction that has locked the name (the
 * MySQL store): given the rows it read, what to grant, drop and answer. The
 * memory store is the reference these follow; the rows' times are the
 * store's clock, in any one unit (the caller's), never the client's clock.
 */

/** One hold row: a live hold while `expiresAt` is ahead, a lock-delay phantom until `blockedUntil`. */
export interface HoldRow {
  readonly owner: string
  readonly mode: HoldMode
  readonly weight: number
  readonly token: bigint
  readonly expiresAt: number
  readonly blockedUntil: number
}

/** One line entry, in the order the line is served. */
export interface LineRow {
  readonly owner: string
  readonly mode: HoldMode
  readonly weight: number
  /** When the entry is dropped unless its owner refreshes it. */
  readonly staleAt: number
}

/** The holds that take a slot now: live ones and lock-delay phantoms (with their whole weight). */
export function takenSlots(holds: readonly HoldRow[], now: number): HoldRow[] {
  return holds.filter((h) => h.blockedUntil > now)
}

/**
 * Serves the line from its head while the head fits (one writer or mutex
 * holder, or readers / permits up to the first that does not fit); stale
 * entries met on the way are dropped. Returns the entries to grant, in
 * order, and those to drop.
 */
export function serveLine<L extends LineRow>(taken: readonly Held[], line: readonly L[], permits: number, now: number): { grant: L[]; drop: L[] } {
  const held: Held[] = [...taken]
  const grant: L[] = []
  const drop: L[] = []
  for (const entry of line) {
    if (entry.staleAt <= now) {
      drop.push(entry)
      continue
    }
    if (!canJoin(held, entry, permits, false)) break
    grant.push(entry)
    held.push(entry)
  }
  return { grant, drop }
}

/**
 * Whether a newcomer (or an owner not at a servable head) is granted at once:
 * never past someone in line on a fair name; a reader never past a queued
 * writer; a permit never past a live head that does not fit yet (it would
 * take what the head waits to see freed). `line` is what is left after
 * serveLine.
 */
export function admitsNow(
  taken: readonly Held[], line: readonly LineRow[], asked: { owner: string; mode: HoldMode; weight: number; fair: boolean },
  permits: number, now: number,
): boolean {
  const live = line.filter((w) => w.staleAt > now)
  if (line.some((w) => w.owner === asked.owner)) return false
  if (asked.fair && live.length > 0) return false
  const writerWaiting = live.some((w) => w.mode === 'write' || w.mode === 'exclusive')
  if (!canJoin(taken, asked, permits, writerWaiting)) return false
  const head = live[0]
  return !(asked.mode === 'permit' && head !== undefined && !canJoin(taken, head, permits, false))
}

/**
 * How long until trying again could succeed without a wake-up: until the
 * first slot frees (a lease ends, then a phantom's lock delay), at least 1.
 * Waiters behind the head are served by hand-overs, so they are given at
 * least their line entry's ttl: a dying holder brings one attempt, not one
 * per waiter.
 */
export function retryAfter(taken: readonly HoldRow[], line: readonly LineRow[], owner: string, queueTtl: number, now: number): number {
  let soonest = Infinity
  for (const h of taken) soonest = Math.min(soonest, (h.expiresAt > now ? h.expiresAt : h.blockedUntil) - now)
  const untilFree = Number.isFinite(soonest) ? Math.max(1, soonest) : 1
  const place = line.filter((w) => w.staleAt > now).findIndex((w) => w.owner === owner)
  return place > 0 ? Math.max(untilFree, queueTtl) : untilFree
}

/**
 * The next fencing token of a name: one above its counter, and never below
 * the store clock in microseconds, so tokens keep increasing after the
 * name's counter row was dropped as idle (after fenceTtl) or lost in a
 * failover to a replica that missed the last commits, as long as the clock
 * does not step back by more than that and a name is granted less than
 * once per microsecond on average.
 */
export function nextToken(lastToken: bigint, nowMicros: number): bigint {
  const floor = BigInt(Math.floor(nowMicros))
  return lastToken + 1n > floor ? lastToken + 1n : floor
}

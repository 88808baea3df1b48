/**
 * The resource `baton verify` keeps, what it saw, and the checks made from
 * the resource's side once the run is over.
 *
 * The resource is a counter that workers read and then write (value + 1)
 * with their fencing token. With fencing on it refuses a token below the
 * highest it has seen, on reads as on writes, and a read advances the fence
 * as a write does: fencing writes alone would let an old holder's last write
 * land between a newer holder's read and write (a lost update), so a fenced
 * read-modify-write fences its read too — with baton/fencing, run the read
 * in the same fenced transaction or script as the write.
 *
 * Every time in a history (`grantedAt`, `at`, …) is milliseconds of the
 * machine's monotonic clock (historyNow(), clock.ts), whichever process
 * stamped it: never the wall clock, which steps.
 */
import { historyNow } from './clock.js'

export interface Hold {
  readonly worker: number
  readonly token: bigint
  readonly grantedAt: number
  /** The worker's own lease deadline at grant (it renews nothing). */
  readonly validUntil: number
  /** When the worker said it stopped writing; undefined if it never did (killed, paused past the end). */
  endedAt?: number
}

export interface Write {
  readonly worker: number
  readonly token: bigint
  readonly at: number
  readonly accepted: boolean
  /** The version the worker read before writing, and the resource's version when the write arrived. */
  readonly readVersion: number
  readonly versionAtWrite: number
  /** The highest token the counter had seen when the write arrived. */
  readonly highestBefore: bigint | undefined
}

export interface Fault {
  readonly kind: 'pause' | 'kill'
  readonly worker: number
  readonly at: number
  /** When the fault was over (the worker resumed, or its replacement started). */
  healedAt?: number
}

/** A call a worker made that the store did not answer (BACKEND_UNAVAILABLE, QUORUM_NOT_REACHED): not a violation. */
export interface Unavailable {
  readonly worker: number
  readonly at: number
  readonly during: 'connect' | 'acquire' | 'release' | 'exit'
  readonly message: string
}

/** Calls the store did not answer, close together in time, as one stretch. */
export interface Outage {
  readonly from: number
  /** The last call that failed. */
  readonly to: number
  /** The first grant after it; undefined if none came before the run ended. */
  readonly recoveredAt: number | undefined
  readonly calls: number
  readonly workers: number[]
  readonly during: string[]
  readonly message: string
}

export type Violation =
  | { readonly kind: 'overlap'; readonly first: Hold; readonly second: Hold }
  /** `later` came after `earlier` with a token not above it; `followers` holds after it stayed below the highest (the same break). */
  | { readonly kind: 'token-order'; readonly earlier: Hold; readonly later: Hold; followers: number }
  | { readonly kind: 'stale-write-accepted'; readonly write: Write }
  | { readonly kind: 'lost-update'; readonly write: Write }
  | { readonly kind: 'no-progress'; readonly fault: Fault; readonly windowMs: number }

/** The counter, its fence, and everything that happened to them. */
export class Resource {
  value = 0
  version = 0
  highest: bigint | undefined
  readonly holds: Hold[] = []
  readonly writes: Write[] = []
  readonly faults: Fault[] = []
  readonly unavailable: Unavailable[] = []

  constructor(readonly fencing: boolean) {}

  /** Reads of stale tokens refused (fencing on). */
  staleReads = 0

  read(token: bigint): { accepted: boolean; value: number; version: number } {
    if (this.fencing) {
      if (this.highest !== undefined && token < this.highest) {
        this.staleReads++
        return { accepted: false, value: this.value, version: this.version }
      }
      this.highest = token
    }
    return { accepted: true, value: this.value, version: this.version }
  }

  write(worker: number, token: bigint, value: number, readVersion: number, at = historyNow()): Write {
    const stale = this.highest !== undefined && token < this.highest
    const accepted = !(this.fencing && stale)
    const write: Write = { worker, token, at, accepted, readVersion, versionAtWrite: this.version, highestBefore: this.highest }
    this.writes.push(write)
    if (accepted) {
      this.value = value
      this.version++
      if (this.highest === undefined || token > this.highest) this.highest = token
    }
    return write
  }
}

/** The end of a hold's right to write: when it said it stopped, or its lease deadline, whichever is first. */
function endOf(hold: Hold): number {
  return hold.endedAt === undefined ? hold.validUntil : Math.min(hold.endedAt, hold.validUntil)
}

/**
 * Clock reads in two processes of one machine, each taken on the safe side
 * (a grant is stamped after the store granted it, an end before the release
 * was sent): a couple of milliseconds covers the rounding of the deadlines.
 */
const CLOCK_SLACK_MS = 2

/** Failed calls further apart than this are separate outages. */
const OUTAGE_GAP_MS = 2000

/**
 * A call that failed in a worker this run paused, during the pause or soon
 * after it: the worker's own stall (its client's session or lease lapsed
 * while it was stopped), not the store's unavailability.
 */
export function afterOwnPause(resource: Resource, event: Unavailable, afterPauseMs: number): boolean {
  return resource.faults.some((f) => f.kind === 'pause' && f.worker === event.worker && event.at >= f.at && event.at <= (f.healedAt ?? Infinity) + afterPauseMs)
}

/**
 * The failed calls of a run as outages, in time order; calls that failed
 * because their worker was paused (afterOwnPause) are left out.
 */
export function outagesOf(resource: Resource, afterPauseMs = 0): Outage[] {
  const events = resource.unavailable.filter((e) => !afterOwnPause(resource, e, afterPauseMs)).sort((a, b) => a.at - b.at)
  const grants = resource.holds.map((h) => h.grantedAt).sort((a, b) => a - b)
  const outages: Outage[] = []
  let group: Unavailable[] = []
  const close = () => {
    if (group.length === 0) return
    const to = group.at(-1)!.at
    outages.push({
      from: group[0]!.at,
      to,
      recoveredAt: grants.find((g) => g > to),
      calls: group.length,
      workers: [...new Set(group.map((e) => e.worker))].sort((a, b) => a - b),
      during: [...new Set(group.map((e) => e.during))],
      message: group[0]!.message,
    })
    group = []
  }
  for (const event of events) {
    if (group.length > 0 && event.at - group.at(-1)!.at > OUTAGE_GAP_MS) close()
    group.push(event)
  }
  close()
  return outages
}

/**
 * The violations of a run, each offending hold or write once (a history of n
 * holds gives at most n hold violations, whatever went wrong): a hold is
 * compared with the one earlier hold that matters, not with every earlier one.
 */
export function findViolations(resource: Resource, options: { progressWindowMs: number; endedAt: number; afterPauseMs?: number }): Violation[] {
  const violations: Violation[] = []
  // A hold whose lease had ended before its worker learnt of it (the answer
  // sat in a stopped process) was never usable: the worker's signal fires at
  // once and the counter refuses it. It takes part in no ordering.
  const holds = resource.holds.filter((h) => h.validUntil > h.grantedAt).sort((a, b) => a.grantedAt - b.grantedAt)
  /** Of the holds granted so far, the one whose right to write ends last. */
  let lastEnding: Hold | undefined
  /** The hold granted just before, and the highest token granted so far. */
  let previous: Hold | undefined
  let highest: Hold | undefined
  for (const hold of holds) {
    if (lastEnding !== undefined && hold.grantedAt + CLOCK_SLACK_MS < endOf(lastEnding)) {
      violations.push({ kind: 'overlap', first: lastEnding, second: hold })
    } else if (previous !== undefined && hold.token <= previous.token) {
      // A token below the one before is where the order broke (a reset, a
      // lost counter). The holds after it that stay below the highest are
      // the same break, counted in its evidence, not reported again.
      violations.push({ kind: 'token-order', earlier: highest ?? previous, later: hold, followers: 0 })
    } else if (highest !== undefined && hold.token <= highest.token) {
      const last = violations.findLast((v) => v.kind === 'token-order')
      if (last?.kind === 'token-order') last.followers++
    }
    if (lastEnding === undefined || endOf(hold) > endOf(lastEnding)) lastEnding = hold
    if (highest === undefined || hold.token > highest.token) highest = hold
    previous = hold
  }
  for (const write of resource.writes) {
    if (!write.accepted) continue
    if (write.highestBefore !== undefined && write.token < write.highestBefore) violations.push({ kind: 'stale-write-accepted', write })
    if (write.readVersion !== write.versionAtWrite) violations.push({ kind: 'lost-update', write })
  }
  // Progress is judged only while the store answered: an outage in the
  // window is unavailability, reported as such.
  const outages = outagesOf(resource, options.afterPauseMs)
  for (const fault of resource.faults) {
    const healed = fault.healedAt ?? fault.at
    const windowEnd = healed + options.progressWindowMs
    if (windowEnd > options.endedAt) continue // the run ended too soon to judge
    if (outages.some((o) => o.from <= windowEnd && (o.recoveredAt ?? options.endedAt) >= healed)) continue
    const progressed = resource.writes.some((w) => w.accepted && w.at > healed && w.at <= windowEnd)
    if (!progressed) violations.push({ kind: 'no-progress', fault, windowMs: options.progressWindowMs })
  }
  return violations
}

/** One line of evidence per violation, times relative to the start of the run. */
export function describeViolation(v: Violation, startedAt: number): string {
  const t = (ms: number) => `+${((ms - startedAt) / 1000).toFixed(3)} s`
  const hold = (h: Hold) => `worker ${h.worker} (token ${h.token}, granted ${t(h.grantedAt)}, ${h.endedAt === undefined ? 'never said it ended' : `ended ${t(h.endedAt)}`}, lease until ${t(h.validUntil)})`
  switch (v.kind) {
    case 'overlap':
      return `two holders at once: ${hold(v.second)} was granted while ${hold(v.first)} still held its lease`
    case 'token-order':
      return `fencing token went backwards: ${hold(v.later)} came after ${hold(v.earlier)}` +
        (v.followers > 0 ? `; the ${v.followers} hold(s) after it stayed below token ${v.earlier.token}` : '')
    case 'stale-write-accepted':
      return `stale write accepted: worker ${v.write.worker} wrote with token ${v.write.token} at ${t(v.write.at)} after token ${v.write.highestBefore} had written`
    case 'lost-update':
      return `lost update: worker ${v.write.worker} (token ${v.write.token}) wrote at ${t(v.write.at)} from version ${v.write.readVersion}, but the resource was at version ${v.write.versionAtWrite}`
    case 'no-progress':
      return `no progress: no write was accepted within ${v.windowMs} ms after the ${v.fault.kind} of worker ${v.fault.worker} ended at ${t(v.fault.healedAt ?? v.fault.at)}`
  }
}

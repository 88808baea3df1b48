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
 */
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

export type Violation =
  | { readonly kind: 'overlap'; readonly first: Hold; readonly second: Hold }
  | { readonly kind: 'token-order'; readonly earlier: Hold; readonly later: Hold }
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

  write(worker: number, token: bigint, value: number, readVersion: number, at = Date.now()): Write {
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
 * was sent): a couple of milliseconds covers the rounding of epoch estimates.
 */
const CLOCK_SLACK_MS = 2

export function findViolations(resource: Resource, options: { progressWindowMs: number; endedAt: number }): Violation[] {
  const violations: Violation[] = []
  // A hold whose lease had ended before its worker learnt of it (the answer
  // sat in a stopped process) was never usable: the worker's signal fires at
  // once and the counter refuses it. It takes part in no ordering.
  const holds = resource.holds.filter((h) => h.validUntil > h.grantedAt).sort((a, b) => a.grantedAt - b.grantedAt)
  for (let i = 0; i < holds.length; i++) {
    for (let j = i + 1; j < holds.length; j++) {
      const first = holds[i]!
      const second = holds[j]!
      if (second.grantedAt + CLOCK_SLACK_MS < endOf(first)) violations.push({ kind: 'overlap', first, second })
      else if (second.token <= first.token) violations.push({ kind: 'token-order', earlier: first, later: second })
    }
  }
  for (const write of resource.writes) {
    if (!write.accepted) continue
    if (write.highestBefore !== undefined && write.token < write.highestBefore) violations.push({ kind: 'stale-write-accepted', write })
    if (write.readVersion !== write.versionAtWrite) violations.push({ kind: 'lost-update', write })
  }
  for (const fault of resource.faults) {
    const healed = fault.healedAt ?? fault.at
    if (healed + options.progressWindowMs > options.endedAt) continue // the run ended too soon to judge
    const progressed = resource.writes.some((w) => w.accepted && w.at > healed && w.at <= healed + options.progressWindowMs)
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
      return `fencing token went backwards: ${hold(v.later)} came after ${hold(v.earlier)}`
    case 'stale-write-accepted':
      return `stale write accepted: worker ${v.write.worker} wrote with token ${v.write.token} at ${t(v.write.at)} after token ${v.write.highestBefore} had written`
    case 'lost-update':
      return `lost update: worker ${v.write.worker} (token ${v.write.token}) wrote at ${t(v.write.at)} from version ${v.write.readVersion}, but the resource was at version ${v.write.versionAtWrite}`
    case 'no-progress':
      return `no progress: no write was accepted within ${v.windowMs} ms after the ${v.fault.kind} of worker ${v.fault.worker} ended at ${t(v.fault.healedAt ?? v.fault.at)}`
  }
}

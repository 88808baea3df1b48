/**
 * The measurement loops, shared by in-process scenarios and bench workers.
 * They only drive a Contender; scenarios decide keys, durations and what to
 * make of the records.
 */
import { performance } from 'node:perf_hooks'
import type { Contender, Release } from './peers/index.js'
import { jain, percentile, reasonOf, Samples } from './report.js'
import { sleep, wallNow, withTimeout } from './util.js'

export interface PairsResult {
  pairs: number
  elapsedMs: number
  /** Latency of each acquire+release pair, ms (sequential loops only). */
  latencies?: Samples
}

/** One flow: acquire + release on `key` back to back for `durationMs`. */
export async function sequentialPairs(contender: Contender, key: string, durationMs: number): Promise<PairsResult> {
  const latencies = new Samples()
  const start = performance.now()
  const end = start + durationMs
  let now = start
  let pairs = 0
  while (now < end) {
    const release = await contender.acquire(key)
    await release()
    const after = performance.now()
    latencies.push(after - now)
    now = after
    pairs++
  }
  return { pairs, elapsedMs: now - start, latencies }
}

/** One flow per key, all at once, each doing acquire + release back to back for `durationMs`. */
export async function parallelPairs(contender: Contender, keys: readonly string[], durationMs: number): Promise<PairsResult> {
  const start = performance.now()
  const end = start + durationMs
  let pairs = 0
  await Promise.all(
    keys.map(async (key) => {
      while (performance.now() < end) {
        const release = await contender.acquire(key)
        await release()
        pairs++
      }
    }),
  )
  return { pairs, elapsedMs: performance.now() - start }
}

// ---------------------------------------------------------------------------
// Contended flows on one key (hand-over scenarios)

/** Flat records, 4 numbers per grant: flow id, wait start, grant, release start (epoch ms, wallNow()). */
export type GrantRecords = number[]
export const GRANT_FIELDS = 4

export interface ContendedOptions {
  key: string
  flowIds: readonly number[]
  /** Epoch ms (wallNow) at which the flows start; they wait until then. */
  startAt: number
  /** Epoch ms after which flows stop re-acquiring; grants after it release at once. */
  stopAt: number
  holdMs: number
  /** How long to wait for the flows still in line after stopAt. */
  drainMs: number
}

export interface ContendedResult {
  grants: GrantRecords
  /** Error reason → count (acquire or release failures). */
  errors: Record<string, number>
  /** The contender's own counters (e.g. redlock retries that ran out). */
  counters: Record<string, number>
  /** Flows still waiting when the drain time ran out (they may still be running). */
  stuckFlows: number
}

const MAX_ERRORS_PER_FLOW = 50

/**
 * Each flow loops: acquire (waiting long), hold `holdMs` (setTimeout), release,
 * re-acquire at once; records every grant with the times of its wait start,
 * grant and release call.
 */
export async function contendedFlows(contender: Contender, options: ContendedOptions): Promise<ContendedResult> {
  const grants: GrantRecords = []
  const errors: Record<string, number> = {}
  const countError = (error: unknown): void => {
    const reason = reasonOf(error)
    errors[reason] = (errors[reason] ?? 0) + 1
  }
  const delay = options.startAt - wallNow()
  if (delay > 0) await sleep(delay)

  let running = options.flowIds.length
  const flow = async (id: number): Promise<void> => {
    let failures = 0
    try {
      for (;;) {
        const waitStart = wallNow()
        if (waitStart >= options.stopAt) return
        let release: Release
        try {
          release = await contender.acquire(options.key)
        } catch (error) {
          countError(error)
          if (++failures >= MAX_ERRORS_PER_FLOW) return
          await sleep(1)
          continue
        }
        const grantAt = wallNow()
        const at = grants.length
        grants.push(id, waitStart, grantAt, NaN)
        if (grantAt < options.stopAt) await sleep(options.holdMs)
        grants[at + 3] = wallNow()
        try {
          await release()
        } catch (error) {
          countError(error)
          if (++failures >= MAX_ERRORS_PER_FLOW) return
        }
      }
    } finally {
      running--
    }
  }
  const all = Promise.all(options.flowIds.map(flow))
  const drainFor = Math.max(0, options.stopAt - wallNow()) + options.drainMs
  try {
    await withTimeout(all, drainFor, 'draining the flows')
  } catch {
    // reported as stuckFlows
  }
  return { grants: grants.slice(), errors, counters: contender.counters?.() ?? {}, stuckFlows: running }
}

export interface HandoffStats {
  /** Grants in the window. */
  grants: number
  /** Grants in the window to another flow than the previous holder. */
  handoffs: number
  grantsPerSec: number
  handoffsPerSec: number
  /** Release call start of the previous holder → grant of the next (hand-overs only), ms. */
  releaseToNextP50: number
  releaseToNextP99: number
  /** Acquire call start → grant, every grant in the window, ms. */
  waitP50: number
  waitP99: number
  jain: number
  minGrants: number
  maxGrants: number
  /** Grants seen before the previous holder's release call started (should be 0). */
  overlaps: number
}

export interface GrantRow {
  flow: number
  waitStart: number
  grantAt: number
  /** NaN while still held (a flow stuck past the drain time). */
  releaseAt: number
}

/** Merged grant records as rows, in grant order. */
export function grantRows(records: GrantRecords): GrantRow[] {
  const rows: GrantRow[] = []
  for (let i = 0; i < records.length; i += GRANT_FIELDS) {
    rows.push({ flow: records[i]!, waitStart: records[i + 1]!, grantAt: records[i + 2]!, releaseAt: records[i + 3]! })
  }
  return rows.sort((a, b) => a.grantAt - b.grantAt)
}

/** Cross-process clocks agree to well under this on one machine, ms. */
const CLOCK_SLACK_MS = 0.05

/** Hand-over statistics of merged grant records within [from, to) (epoch ms). */
export function analyzeGrants(records: GrantRecords, flowIds: readonly number[], from: number, to: number): HandoffStats {
  const rows = grantRows(records)
  const counts = new Map<number, number>(flowIds.map((id) => [id, 0]))
  const releaseToNext: number[] = []
  const waits: number[] = []
  let grants = 0
  let handoffs = 0
  let overlaps = 0
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!
    if (row.grantAt < from || row.grantAt >= to) continue
    grants++
    counts.set(row.flow, (counts.get(row.flow) ?? 0) + 1)
    waits.push(row.grantAt - row.waitStart)
    const previous = rows[i - 1]
    if (!previous) continue
    if (row.grantAt < previous.releaseAt - CLOCK_SLACK_MS) overlaps++
    if (previous.flow !== row.flow) {
      handoffs++
      releaseToNext.push(row.grantAt - previous.releaseAt)
    }
  }
  const seconds = (to - from) / 1000
  const perFlow = [...counts.values()]
  return {
    grants,
    handoffs,
    grantsPerSec: grants / seconds,
    handoffsPerSec: handoffs / seconds,
    releaseToNextP50: percentile(releaseToNext, 50),
    releaseToNextP99: percentile(releaseToNext, 99),
    waitP50: percentile(waits, 50),
    waitP99: percentile(waits, 99),
    jain: jain(perFlow),
    minGrants: Math.min(...perFlow),
    maxGrants: Math.max(...perFlow),
    overlaps,
  }
}

export interface ArrivalOrderStats {
  /** Grants in the window checked for their turn (a flow's later grants whose previous grant is known). */
  checked: number
  /**
   * Fraction of the checked grants that came exactly `flows` grants after the
   * same flow's previous grant in the global grant sequence: with every flow
   * re-joining the line at once, that is what strict arrival order gives.
   */
  inTurn: number
  /**
   * Grants in the window that went to a flow while another flow, whose
   * acquire call started more than `slackMs` earlier, was still waiting.
   */
  overtakes: number
}

/**
 * Did the grants come in arrival order? `rows` in grant order (grantRows()),
 * all of them (warm-up included, so sequence positions are global); grants
 * are judged within [from, to).
 */
export function arrivalOrder(rows: readonly GrantRow[], flows: number, from: number, to: number, slackMs = 1): ArrivalOrderStats {
  const lastAt = new Map<number, number>()
  let checked = 0
  let inTurn = 0
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!
    const previous = lastAt.get(row.flow)
    lastAt.set(row.flow, i)
    if (row.grantAt < from || row.grantAt >= to || previous === undefined) continue
    checked++
    if (i - previous === flows) inTurn++
  }
  // Earliest wait start among the grants still to come, from the back.
  let overtakes = 0
  let laterMin = Infinity
  for (let i = rows.length - 1; i >= 0; i--) {
    const row = rows[i]!
    if (row.grantAt >= from && row.grantAt < to && laterMin < row.waitStart - slackMs) overtakes++
    laterMin = Math.min(laterMin, row.waitStart)
  }
  return { checked, inTurn: checked ? inTurn / checked : NaN, overtakes }
}

export interface PermitStats {
  grants: number
  grantsPerSec: number
  /** Acquire call start → grant, every grant in the window, ms. */
  waitP50: number
  waitP99: number
  jain: number
  minGrants: number
  /** Most holds at once over the whole run (each from its grant to its release call start). */
  maxHolders: number
  /** Grants that made more than `permits` holders at once (should be 0). */
  overCapacity: number
}

/** Statistics of merged grant records of a semaphore with `permits` permits, within [from, to). */
export function analyzePermits(records: GrantRecords, flowIds: readonly number[], from: number, to: number, permits: number): PermitStats {
  const rows = grantRows(records)
  const counts = new Map<number, number>(flowIds.map((id) => [id, 0]))
  const waits: number[] = []
  // Sweep: +1 at a grant, -1 at a release call start (a little earlier for clock slack); releases first on ties.
  const events: [at: number, delta: number][] = []
  for (const row of rows) {
    events.push([row.grantAt, 1])
    if (Number.isFinite(row.releaseAt)) events.push([row.releaseAt - CLOCK_SLACK_MS, -1])
    if (row.grantAt < from || row.grantAt >= to) continue
    counts.set(row.flow, (counts.get(row.flow) ?? 0) + 1)
    waits.push(row.grantAt - row.waitStart)
  }
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1])
  let holders = 0
  let maxHolders = 0
  let overCapacity = 0
  for (const [, delta] of events) {
    holders += delta
    if (delta > 0 && holders > permits) overCapacity++
    maxHolders = Math.max(maxHolders, holders)
  }
  const perFlow = [...counts.values()]
  return {
    grants: waits.length,
    grantsPerSec: waits.length / ((to - from) / 1000),
    waitP50: percentile(waits, 50),
    waitP99: percentile(waits, 99),
    jain: jain(perFlow),
    minGrants: Math.min(...perFlow),
    maxHolders,
    overCapacity,
  }
}

/**
 * The measurement loops, shared by `baton bench`, in-process scenarios and bench workers.
 * They only drive a Contender; scenarios decide keys, durations and what to
 * make of the records.
 */
import { performance } from 'node:perf_hooks'
import type { Contender, Release } from './contender.js'
import { jain, percentile, reasonOf, Samples } from './stats.js'
import { sleep, wallNow, withTimeout } from './time.js'

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
export const CLOCK_SLACK_MS = 0.05

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

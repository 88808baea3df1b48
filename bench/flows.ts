/**
 * Grant analyses only the bench/ harness needs; the measurement loops and the
 * hand-over statistics live in src/bench/flows.ts (shipped: `baton bench` uses them).
 */
import { jain, percentile } from '../src/bench/stats.js'
import { CLOCK_SLACK_MS, type GrantRecords, type GrantRow, grantRows } from '../src/bench/flows.js'

export * from '../src/bench/flows.js'

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

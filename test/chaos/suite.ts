/**
 * What each test/chaos/<store>.test.ts runs: the store's fixed seed (a
 * regression case: a plan that once found a defect, or the store's own),
 * then one random seed, printed, for a short budget. A run fails only on a
 * violation: starved waiters are warnings (load can cause them), known
 * exceptions are printed apart.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Primitive } from '../../src/chaos/history.js'
import { keepHistory, runChaos } from './runner.js'
import type { StoreKind } from './stores.js'

export interface ChaosCase {
  readonly seed: number
  readonly seconds: number
  readonly ttlMs?: number
  readonly faults?: readonly string[]
  readonly primitives?: readonly Primitive[]
  /** What this seed once found (a regression case), for the test's name. */
  readonly found?: string
}

export function chaosSuite(store: StoreKind, cases: readonly ChaosCase[], randomSeconds = 8, randomFaults?: readonly string[]): void {
  const random = process.env.BATON_CHAOS_SEED ? Number(process.env.BATON_CHAOS_SEED) : Math.floor(Math.random() * 2 ** 31)
  const all: ChaosCase[] = [...cases, { seed: random, seconds: randomSeconds, ...(randomFaults ? { faults: randomFaults } : {}) }]
  for (const c of all) {
    const label = `chaos on ${store}: seed ${c.seed}, ${c.seconds} s${c.found ? ` (found: ${c.found})` : c === all.at(-1) ? ' (random seed)' : ''}`
    test(label, async (t) => {
      const result = await runChaos({ store, ...c })
      for (const line of result.report.split('\n')) t.diagnostic(line)
      // A failing run's whole history is kept, for the checker's evidence to be read in full.
      const kept = result.verdict.violations.length > 0 ? keepHistory(store, c.seed, result.history) : ''
      assert.equal(result.verdict.violations.length, 0, `${result.report}\n${kept}`)
    })
  }
}


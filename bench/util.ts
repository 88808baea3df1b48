import { randomBytes } from 'node:crypto'
import { reasonOf } from './report.js'

import { withTimeout } from '../src/bench/time.js'

export { sleep, wallNow, withTimeout } from '../src/bench/time.js'

/** Unique, cheap lock values: a random per-process prefix plus a counter. */
const valuePrefix = randomBytes(6).toString('base64url')
let valueCounter = 0
export function nextValue(): string {
  valueCounter += 1
  return `${valuePrefix}${valueCounter.toString(36)}`
}

/** Unique per bench process, so keys of two runs never collide. */
export const runTag = randomBytes(3).toString('hex')

export type Outcome<T> = { ok: true; value: T } | { ok: false; reason: string }

/**
 * Runs `measure` for every contender in every run, rotating the order each
 * run so slow drifts of a noisy machine hit every contender alike. A failure
 * (or a timeout) of one contender is recorded and the run goes on.
 */
export async function alternate<C extends { readonly id: string }, T>(
  runs: number,
  contenders: readonly C[],
  measure: (contender: C, run: number) => Promise<T>,
  options: { timeoutMs: number; log?: (message: string) => void },
): Promise<Map<string, Outcome<T>[]>> {
  const results = new Map<string, Outcome<T>[]>(contenders.map((c) => [c.id, []]))
  for (let run = 0; run < runs; run++) {
    for (let i = 0; i < contenders.length; i++) {
      const contender = contenders[(i + run) % contenders.length]!
      let outcome: Outcome<T>
      try {
        outcome = { ok: true, value: await withTimeout(measure(contender, run), options.timeoutMs, contender.id) }
      } catch (error) {
        outcome = { ok: false, reason: reasonOf(error) }
        options.log?.(`  ${contender.id} run ${run + 1}: failed: ${outcome.reason}`)
      }
      results.get(contender.id)!.push(outcome)
    }
  }
  return results
}

/** Values of the successful runs. */
export function oks<T>(outcomes: readonly Outcome<T>[] | undefined): T[] {
  return (outcomes ?? []).flatMap((o) => (o.ok ? [o.value] : []))
}

/** "failed: reason" when every run failed, a note when some did, else ''. */
export function failureNote<T>(outcomes: readonly Outcome<T>[] | undefined): string {
  const failed = (outcomes ?? []).filter((o): o is { ok: false; reason: string } => !o.ok)
  if (failed.length === 0) return ''
  const reasons = [...new Set(failed.map((f) => f.reason))].join('; ')
  if (failed.length === outcomes!.length) return `failed: ${reasons}`
  return `${failed.length}/${outcomes!.length} runs failed: ${reasons}`
}

/** Per-run ratios a/b where both runs succeeded, paired by run index. */
export function pairedRatios<T>(
  a: readonly Outcome<T>[] | undefined, b: readonly Outcome<T>[] | undefined, value: (t: T) => number,
): number[] {
  const ratios: number[] = []
  for (let i = 0; i < Math.min(a?.length ?? 0, b?.length ?? 0); i++) {
    const x = a![i]!
    const y = b![i]!
    if (x.ok && y.ok) ratios.push(value(x.value) / value(y.value))
  }
  return ratios
}

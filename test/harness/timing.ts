/**
 * Timing knob for the test harness. Slow machines (or CI under load) can set
 * BATON_TEST_TIMING=2 to double every harness timeout and deadline at once,
 * instead of hunting down individual constants.
 */

import { availableParallelism, loadavg } from 'node:os'

function readScale(): number {
  const raw = process.env.BATON_TEST_TIMING;
  const scale = Number(raw === undefined || raw === '' ? 1 : raw);
  if (!Number.isFinite(scale) || scale <= 0) {
    throw new Error(`BATON_TEST_TIMING must be a finite number > 0, got ${JSON.stringify(raw)}`);
  }
  return scale;
}

/**
 * The machine's load per core when this file starts, up to 5 (scripts/test.mjs's
 * cap). `npm test` measures the machine once, at its start; a file started
 * after the machine got busier (other work began meanwhile) waits as long
 * as the load it starts in asks, never shorter than the run's figure.
 */
function loadNow(): number {
  return Math.min(5, loadavg()[0]! / availableParallelism());
}

export const TIMING_SCALE: number = Math.round(Math.max(readScale(), loadNow()) * 10) / 10;

/** Scale a duration in milliseconds by TIMING_SCALE (rounded to an integer). */
export function ms(n: number): number {
  return Math.round(n * TIMING_SCALE);
}

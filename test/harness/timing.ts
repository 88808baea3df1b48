/**
 * Timing knob for the test harness. Slow machines (or CI under load) can set
 * BATON_TEST_TIMING=2 to double every harness timeout and deadline at once,
 * instead of hunting down individual constants.
 */

function readScale(): number {
  const raw = process.env.BATON_TEST_TIMING;
  const scale = Number(raw === undefined || raw === '' ? 1 : raw);
  if (!Number.isFinite(scale) || scale <= 0) {
    throw new Error(`BATON_TEST_TIMING must be a finite number > 0, got ${JSON.stringify(raw)}`);
  }
  return scale;
}

export const TIMING_SCALE: number = readScale();

/** Scale a duration in milliseconds by TIMING_SCALE (rounded to an integer). */
export function ms(n: number): number {
  return Math.round(n * TIMING_SCALE);
}

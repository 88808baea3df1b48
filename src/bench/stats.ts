/**
 * Statistics of the benchmark (medians, percentiles, Jain's fairness index,
 * sample buffers), shared by `baton bench` and the bench/ harness. No I/O here.
 */

/** Median of the finite values; NaN when there are none. */
export function median(values: readonly number[]): number {
  return percentile(values, 50)
}

/**
 * Percentile `p` (0..100) with linear interpolation between closest ranks.
 * Non-finite values are ignored; NaN when nothing is left.
 */
export function percentile(values: readonly number[] | Float64Array, p: number): number {
  const sorted = Array.from(values).filter(Number.isFinite).sort((a, b) => a - b)
  return percentileOfSorted(sorted, p)
}

export function percentileOfSorted(sorted: readonly number[] | Float64Array, p: number): number {
  if (sorted.length === 0) return NaN
  const rank = (Math.min(100, Math.max(0, p)) / 100) * (sorted.length - 1)
  const lo = Math.floor(rank)
  const hi = Math.ceil(rank)
  const a = sorted[lo]!
  const b = sorted[hi]!
  return a + (b - a) * (rank - lo)
}

/** Jain's fairness index of `xs`: 1 when all equal, 1/n when one takes everything. */
export function jain(xs: readonly number[]): number {
  if (xs.length === 0) return NaN
  let sum = 0
  let squares = 0
  for (const x of xs) {
    sum += x
    squares += x * x
  }
  return squares === 0 ? NaN : (sum * sum) / (xs.length * squares)
}

/** A growable buffer of float samples (latencies) without per-sample allocation. */
export class Samples {
  private data = new Float64Array(1024)
  length = 0

  push(value: number): void {
    if (this.length === this.data.length) {
      const bigger = new Float64Array(this.data.length * 2)
      bigger.set(this.data)
      this.data = bigger
    }
    this.data[this.length++] = value
  }

  /** Sorted copy of the samples. */
  sorted(): Float64Array {
    return this.data.slice(0, this.length).sort()
  }

  percentile(p: number): number {
    return percentileOfSorted(this.sorted(), p)
  }
}

/** The first line of an error's message, trimmed, for "failed: reason" cells. */
export function reasonOf(error: unknown): string {
  const text = error instanceof Error ? `${error.name && error.name !== 'Error' ? `${error.name}: ` : ''}${error.message}` : String(error)
  const line = text.split('\n')[0]!.trim()
  return line.length > 140 ? `${line.slice(0, 137)}…` : line
}

/**
 * Statistics and markdown output for the benchmark: medians, percentiles,
 * Jain's fairness index, number formatting and table printing. No I/O here.
 */

export { jain, median, percentile, percentileOfSorted, reasonOf, Samples } from '../src/bench/stats.js'

// ---------------------------------------------------------------------------
// Formatting

export function fmtInt(n: number): string {
  if (!Number.isFinite(n)) return '—'
  return Math.round(n).toLocaleString('en-US')
}

/** Rates: 12,345/s; small ones with one decimal. */
export function fmtRate(n: number): string {
  if (!Number.isFinite(n)) return '—'
  return n >= 100 ? `${fmtInt(n)}/s` : `${n.toFixed(1)}/s`
}

/** Milliseconds, with enough digits for sub-ms figures. */
export function fmtMs(n: number): string {
  if (!Number.isFinite(n)) return '—'
  if (Math.abs(n) < 1) return `${n.toFixed(3)} ms`
  if (Math.abs(n) < 10) return `${n.toFixed(2)} ms`
  if (Math.abs(n) < 1000) return `${n.toFixed(1)} ms`
  return `${(n / 1000).toFixed(2)} s`
}

export function fmtRatio(n: number): string {
  if (!Number.isFinite(n)) return n === Infinity ? '∞' : '—'
  return n !== 0 && Math.abs(n) < 0.1 ? `${n.toPrecision(2)}×` : `${n.toFixed(2)}×`
}

export function fmtNum(n: number, digits = 2): string {
  if (!Number.isFinite(n)) return n === Infinity ? '∞' : '—'
  return n.toFixed(digits)
}

export function fmtBytes(n: number): string {
  if (!Number.isFinite(n)) return '—'
  return `${n.toFixed(0)} B`
}

export function fmtMet(met: boolean | undefined): string {
  return met === undefined ? '—' : met ? '✅ yes' : '❌ no'
}

/** Markdown table; `|` in cells is escaped and newlines flattened. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const clean = (cell: string): string => cell.replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ')
  const lines = [
    `| ${headers.map(clean).join(' | ')} |`,
    `| ${headers.map((_, i) => (i === 0 ? '---' : '---:')).join(' | ')} |`,
    ...rows.map((row) => `| ${headers.map((_, i) => clean(row[i] ?? '')).join(' | ')} |`),
  ]
  return lines.join('\n')
}

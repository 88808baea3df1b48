import type { Registry } from 'prom-client'

/**
 * Histograms and counters for the hot path, registered in a prom-client
 * Registry (which formats /metrics, with the default process metrics
 * beside them). prom-client's own observe() validates and hashes its labels
 * object on every call, and that cost about 15 µs of the server's ~50 µs
 * per request: here a series is looked up once per label-value combination
 * (by the caller, who keeps it) and an observation is a bucket search and
 * three additions.
 */

interface Sample {
  labels: Record<string, string | number>
  value: number
  metricName?: string
}

export class HistogramSeries {
  readonly counts: Float64Array
  sum = 0
  count = 0
  constructor(private readonly bounds: readonly number[], readonly labels: Record<string, string>) {
    this.counts = new Float64Array(bounds.length)
  }

  observe(value: number): void {
    const bounds = this.bounds
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]!) {
        this.counts[i]! += 1
        break
      }
    }
    this.sum += value
    this.count += 1
  }
}

export class CounterSeries {
  value = 0
  constructor(readonly labels: Record<string, string>) {}
  inc(): void {
    this.value += 1
  }
}

abstract class FastMetric<S> {
  abstract readonly type: 'histogram' | 'counter'
  readonly aggregator = 'sum'
  protected readonly series = new Map<string, S>()
  constructor(readonly name: string, readonly help: string, protected readonly labelNames: readonly string[], registry: Registry) {
    registry.registerMetric(this as never)
  }

  /** The series of these label values (in `labelNames` order); keep it, it is the fast path. */
  labels(...values: string[]): S {
    const key = values.join('\u0000')
    let series = this.series.get(key)
    if (!series) {
      series = this.make(Object.fromEntries(this.labelNames.map((n, i) => [n, values[i]!])))
      this.series.set(key, series)
    }
    return series
  }

  reset(): void {
    this.series.clear()
  }

  protected abstract make(labels: Record<string, string>): S
}

export class FastHistogram extends FastMetric<HistogramSeries> {
  readonly type = 'histogram'
  constructor(name: string, help: string, labelNames: readonly string[], private readonly buckets: readonly number[], registry: Registry) {
    super(name, help, labelNames, registry)
  }

  protected make(labels: Record<string, string>): HistogramSeries {
    return new HistogramSeries(this.buckets, labels)
  }

  get() {
    const values: Sample[] = []
    for (const s of this.series.values()) {
      let acc = 0
      this.buckets.forEach((le, i) => {
        acc += s.counts[i]!
        values.push({ labels: { ...s.labels, le }, value: acc, metricName: `${this.name}_bucket` })
      })
      values.push({ labels: { ...s.labels, le: '+Inf' }, value: s.count, metricName: `${this.name}_bucket` })
      values.push({ labels: s.labels, value: s.sum, metricName: `${this.name}_sum` })
      values.push({ labels: s.labels, value: s.count, metricName: `${this.name}_count` })
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator }
  }
}

export class FastCounter extends FastMetric<CounterSeries> {
  readonly type = 'counter'
  protected make(labels: Record<string, string>): CounterSeries {
    return new CounterSeries(labels)
  }

  get() {
    const values: Sample[] = [...this.series.values()].map((s) => ({ labels: s.labels, value: s.value }))
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator }
  }
}

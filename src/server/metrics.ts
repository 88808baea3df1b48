import { Gauge, Registry, collectDefaultMetrics } from 'prom-client'
import type { EventHub } from './events.js'
import { FastCounter, FastHistogram, type CounterSeries, type HistogramSeries } from './fast-metrics.js'

/**
 * Prometheus metrics of one server, fed by the event hub (grants, releases,
 * expiries, losses), by the acquire route (latency, timeouts) and by every
 * HTTP request (durations). Labels never carry lock names or owners: names
 * are unbounded and owners are secrets. The per-request ones are
 * fast-metrics series found through small maps, with no labels object made
 * or hashed per request.
 */
export class Metrics {
  readonly registry = new Registry()
  private readonly acquireSeconds: FastHistogram
  private readonly timeouts: FastCounter
  private readonly httpSeconds: FastHistogram
  private readonly unsubscribe: () => void
  private readonly acquireSeries = new Map<string, Map<string, HistogramSeries>>()
  private readonly timeoutSeries = new Map<string, CounterSeries>()
  private readonly store: string

  private readonly dropped: CounterSeries

  constructor(hub: EventHub, gauges: { held: () => number; waiting: () => number; store: string; streams: () => number; streamBytes: () => number }) {
    const store = (this.store = gauges.store)
    const registry = this.registry
    const registers = [registry]
    collectDefaultMetrics({ register: registry })
    this.acquireSeconds = new FastHistogram(
      'baton_acquire_duration_seconds', 'acquire requests, from arrival to answer (waiting included)', ['store', 'kind', 'outcome'],
      [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registry,
    )
    const wait = new FastHistogram(
      'baton_wait_seconds', 'time granted acquires spent waiting for the lock', ['store', 'kind'],
      [0, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60], registry,
    )
    this.timeouts = new FastCounter('baton_timeouts_total', 'acquires answered LOCK_TIMEOUT', ['store', 'kind'], registry)
    const byType = {
      grant: new FastCounter('baton_grants_total', 'leases granted', ['store', 'kind'], registry),
      release: new FastCounter('baton_releases_total', 'leases released', ['store', 'kind'], registry),
      expire: new FastCounter('baton_expiries_total', 'leases that ran out without renewal', ['store', 'kind'], registry),
      lost: new FastCounter('baton_losses_total', 'leases the store took away (forced release, replaced)', ['store', 'kind'], registry),
    }
    new Gauge({
      name: 'baton_held_leases', help: 'leases granted through this server and not yet released, expired or lost',
      labelNames: ['store'], registers, collect() { this.set({ store }, gauges.held()) },
    })
    new Gauge({
      name: 'baton_waiting_requests', help: 'acquire requests waiting for their lock on this server',
      labelNames: ['store'], registers, collect() { this.set({ store }, gauges.waiting()) },
    })
    new Gauge({
      name: 'baton_event_streams', help: 'open event streams (GET /v1/events)',
      labelNames: ['store'], registers, collect() { this.set({ store }, gauges.streams()) },
    })
    new Gauge({
      name: 'baton_event_stream_buffered_bytes', help: 'bytes written to event streams and not yet taken by their readers, all streams together',
      labelNames: ['store'], registers, collect() { this.set({ store }, gauges.streamBytes()) },
    })
    this.dropped = new FastCounter(
      'baton_event_streams_dropped_total', 'event streams ended because their reader fell behind', ['store'], registry,
    ).labels(store)
    this.httpSeconds = new FastHistogram(
      'baton_http_request_duration_seconds', 'HTTP requests by route and status', ['method', 'route', 'status'],
      [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 5, 30], registry,
    )
    const counted = new Map<string, CounterSeries>()
    const waited = new Map<string, HistogramSeries>()
    this.unsubscribe = hub.count((type, kind, waitedMs) => {
      // A forced release is counted as the holders' loss ('lost') already.
      if (type === 'forced') return
      // Keyed by type and kind: two short strings, a handful of series.
      const key = type + kind
      let series = counted.get(key)
      if (!series) counted.set(key, (series = byType[type].labels(store, kind)))
      series.inc()
      if (type === 'grant' && waitedMs !== undefined) {
        let histogram = waited.get(kind)
        if (!histogram) waited.set(kind, (histogram = wait.labels(store, kind)))
        histogram.observe(waitedMs / 1000)
      }
    })
  }

  /** One acquire request answered, `outcome` 'granted' or an error code. */
  acquired(kind: string, outcome: string, seconds: number): void {
    let byOutcome = this.acquireSeries.get(kind)
    if (!byOutcome) this.acquireSeries.set(kind, (byOutcome = new Map()))
    let series = byOutcome.get(outcome)
    if (!series) byOutcome.set(outcome, (series = this.acquireSeconds.labels(this.store, kind, outcome)))
    series.observe(seconds)
    if (outcome === 'lock_timeout') {
      let timeouts = this.timeoutSeries.get(kind)
      if (!timeouts) this.timeoutSeries.set(kind, (timeouts = this.timeouts.labels(this.store, kind)))
      timeouts.inc()
    }
  }

  /**
   * The recorder of one route's request durations (`route` is its pattern,
   * never the path: names are unbounded), keeping its series by status.
   */
  route(route: string): (method: string, status: number, seconds: number) => void {
    const series = new Map<string, Map<number, HistogramSeries>>()
    return (method, status, seconds) => {
      let byStatus = series.get(method)
      if (!byStatus) series.set(method, (byStatus = new Map()))
      let one = byStatus.get(status)
      if (!one) byStatus.set(status, (one = this.httpSeconds.labels(method, route, String(status))))
      one.observe(seconds)
    }
  }

  /** An event stream ended because its reader fell behind. */
  streamDropped(): void {
    this.dropped.inc()
  }

  close(): void {
    this.unsubscribe()
  }
}

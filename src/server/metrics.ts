import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type { EventHub, PublicEventType } from './events.js'

/**
 * Prometheus metrics of one server, fed by the event hub (grants, releases,
 * expiries, losses), by the acquire route (latency, timeouts) and by every
 * HTTP request (durations). Labels never carry lock names or owners: names
 * are unbounded and owners are secrets.
 */
export class Metrics {
  readonly registry = new Registry()
  private readonly acquireSeconds: Histogram<'store' | 'kind' | 'outcome'>
  private readonly timeouts: Counter<'store' | 'kind'>
  private readonly httpSeconds: Histogram<'method' | 'route' | 'status'>
  private readonly unsubscribe: () => void
  /**
   * Label children by their label values: prom-client hashes a labels object
   * on every observe, which cost more than the rest of a metric update on the
   * hot path; a child found by a short key skips that.
   */
  private readonly children = new Map<string, { observe(value: number): void } | { inc(): void }>()
  private readonly store: string

  constructor(hub: EventHub, gauges: { held: () => number; waiting: () => number; store: string }) {
    this.store = gauges.store
    const registers = [this.registry]
    collectDefaultMetrics({ register: this.registry })
    this.acquireSeconds = new Histogram({
      name: 'baton_acquire_duration_seconds', help: 'acquire requests, from arrival to answer (waiting included)',
      labelNames: ['store', 'kind', 'outcome'], registers,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    })
    const wait = new Histogram({
      name: 'baton_wait_seconds', help: 'time granted acquires spent waiting for the lock',
      labelNames: ['store', 'kind'], registers,
      buckets: [0, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60],
    })
    this.timeouts = new Counter({ name: 'baton_timeouts_total', help: 'acquires answered LOCK_TIMEOUT', labelNames: ['store', 'kind'], registers })
    const byType: Record<PublicEventType, Counter<'store' | 'kind'>> = {
      grant: new Counter({ name: 'baton_grants_total', help: 'leases granted', labelNames: ['store', 'kind'], registers }),
      release: new Counter({ name: 'baton_releases_total', help: 'leases released', labelNames: ['store', 'kind'], registers }),
      expire: new Counter({ name: 'baton_expiries_total', help: 'leases that ran out without renewal', labelNames: ['store', 'kind'], registers }),
      lost: new Counter({ name: 'baton_losses_total', help: 'leases the store took away (forced release, replaced)', labelNames: ['store', 'kind'], registers }),
    }
    new Gauge({
      name: 'baton_held_leases', help: 'leases granted through this server and not yet released, expired or lost',
      labelNames: ['store'], registers, collect() { this.set({ store: gauges.store }, gauges.held()) },
    })
    new Gauge({
      name: 'baton_waiting_requests', help: 'acquire requests waiting for their lock on this server',
      labelNames: ['store'], registers, collect() { this.set({ store: gauges.store }, gauges.waiting()) },
    })
    this.httpSeconds = new Histogram({
      name: 'baton_http_request_duration_seconds', help: 'HTTP requests by route and status',
      labelNames: ['method', 'route', 'status'], registers,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 5, 30],
    })
    const store = gauges.store
    this.unsubscribe = hub.count((type, kind, waitedMs) => {
      this.child(`${type} ${kind}`, () => byType[type].labels(store, kind)).inc()
      if (type === 'grant' && waitedMs !== undefined) this.child(`wait ${kind}`, () => wait.labels(store, kind)).observe(waitedMs / 1000)
    })
  }

  /** One acquire request answered, `outcome` 'granted' or an error code. */
  acquired(kind: string, outcome: string, seconds: number): void {
    this.child(`acquire ${kind} ${outcome}`, () => this.acquireSeconds.labels(this.store, kind, outcome)).observe(seconds)
    if (outcome === 'lock_timeout') this.child(`timeout ${kind}`, () => this.timeouts.labels(this.store, kind)).inc()
  }

  /** One HTTP request answered. `route` is the route's pattern, never the path (names are unbounded). */
  request(method: string, route: string, status: number, seconds: number): void {
    this.child(`${status} ${method} ${route}`, () => this.httpSeconds.labels(method, route, String(status))).observe(seconds)
  }

  private child<T>(key: string, make: () => T): T {
    let child = this.children.get(key) as T | undefined
    if (!child) {
      child = make()
      this.children.set(key, child as never)
    }
    return child
  }

  close(): void {
    this.unsubscribe()
  }
}

/**
 * OpenTelemetry for baton: spans and metrics made from the library's
 * diagnostics_channel events (src/core/events.ts), through
 * `@opentelemetry/api`, an optional peer. Nothing here is loaded unless a
 * program imports `baton/otel` and calls `instrument()`; the api package is
 * then loaded by a dynamic import, so a program without it pays nothing and
 * needs nothing. What becomes of the spans and metrics (exporters, sampling)
 * is the program's SDK setup, as with any instrumentation library.
 *
 * - `baton.lock.acquire`: a span per acquire, a child of the span active where
 *   acquire() was called; it covers the wait and carries the outcome, the
 *   store, kind, mode, fairness, wait time and fencing token; the lock name
 *   only with `lockNames: true` (names can be high-cardinality or sensitive).
 *   A hand-over is an event on it; `baton.lock.attempts` counts the attempts
 *   sent to the store (1 for an uncontended grant).
 * - `baton.lock.hold`: a span from the grant to the release or loss, a child
 *   of the same caller span; the loss is an event on it (cause: expired,
 *   i.e. no renewal confirmed in time, or taken: forced or replaced), and so
 *   is each automatic renewal that failed and will be retried.
 * - metrics: baton.lock.acquire.duration, baton.lock.active_holds,
 *   baton.lock.hold.duration, baton.lock.losses, baton.lock.timeouts.
 * - the http:// store sends the active trace context (W3C traceparent) with
 *   its requests (src/core/trace-context.ts), unless `propagate: false`.
 */
import type * as Otel from '@opentelemetry/api'
import { BatonError } from '../core/errors.js'
import { channels, type AcquireEvent, type GiveUpEvent, type HoldEvent, type LostEvent, type RenewFailedEvent, type WaitEvent } from '../core/events.js'
import { monotonicNow } from '../core/clock.js'
import { traceContext } from '../core/trace-context.js'

export interface InstrumentOptions {
  /** Put lock names on spans (`baton.lock.name`); never on metrics. Default false. */
  lockNames?: boolean
  /** The `@opentelemetry/api` module to use; default: loaded with a dynamic import. */
  api?: typeof Otel
  /**
   * Send the active trace context (W3C `traceparent`, through the propagator of
   * your OpenTelemetry setup) with the requests of the http:// store, so the
   * lock server's spans join the caller's trace. Default true.
   */
  propagate?: boolean
  /** Holds followed at once for their hold span and duration; the oldest are ended past it. Default 100,000. */
  maxTrackedHolds?: number
}

const SCOPE = 'baton'
const VERSION = '0.1.0'

/** Acquire and hold durations: from a fast uncontended grant (~0.1 ms) to long waits and holds, in seconds. */
const DURATION_BUCKETS = [0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600]

type Mode = HoldEvent['mode']
const kindOf = (mode: Mode): string => (mode === 'exclusive' ? 'mutex' : mode === 'permit' ? 'semaphore' : 'rwlock')

interface Held {
  span: Otel.Span
  startedAt: number
  attributes: Otel.Attributes
}

/** Loads the optional peer, or says how to get it. */
async function loadApi(): Promise<typeof Otel> {
  try {
    return await import('@opentelemetry/api')
  } catch (cause) {
    throw new BatonError('INVALID_ARGUMENT', 'baton/otel needs the package "@opentelemetry/api" (an optional peer): npm install @opentelemetry/api', { cause })
  }
}

/**
 * Starts tracing and metrics of every baton client of this process; returns
 * the function that stops them (open hold spans are ended then).
 */
export async function instrument(options: InstrumentOptions = {}): Promise<() => void> {
  const api = options.api ?? (await loadApi())
  const lockNames = options.lockNames === true
  const maxTracked = options.maxTrackedHolds ?? 100_000
  const tracer = api.trace.getTracer(SCOPE, VERSION)
  const meter = api.metrics.getMeter(SCOPE, VERSION)

  const acquireDuration = meter.createHistogram('baton.lock.acquire.duration', {
    description: 'Time from asking for a lock to its grant or to giving up, waiting included', unit: 's',
    advice: { explicitBucketBoundaries: DURATION_BUCKETS },
  })
  const activeHolds = meter.createUpDownCounter('baton.lock.active_holds', { description: 'Holds granted and not yet released or lost', unit: '{hold}' })
  const holdDuration = meter.createHistogram('baton.lock.hold.duration', {
    description: 'Time from a grant to its release or loss', unit: 's', advice: { explicitBucketBoundaries: DURATION_BUCKETS },
  })
  const losses = meter.createCounter('baton.lock.losses', { description: 'Holds lost before their release, by cause', unit: '{loss}' })
  const timeouts = meter.createCounter('baton.lock.timeouts', { description: 'Acquires that gave up without a grant, by cause', unit: '{acquire}' })

  /** Where each waiting owner started, for the span of an acquire that gives up. */
  const waiting = new Map<string, { startedAt: number; epochMs: number }>()
  const held = new Map<string, Held>()
  const keyOf = (event: { owner: string; name: string }) => `${event.owner}\u0000${event.name}`

  /**
   * The attribute sets of metrics and span starts, made once per store, kind,
   * mode and fairness (and per added key and value) and reused: a pair on the
   * memory store costs a few µs, and building these objects per event (by
   * spreads, which V8 turns into dictionary objects) cost several times that
   * with no SDK installed at all.
   */
  const commonSets = new Map<string, Otel.Attributes>()
  const common = (event: { store: string; mode: Mode }, extra: { kind?: string; fair?: boolean } = {}): Otel.Attributes => {
    const kind = extra.kind ?? kindOf(event.mode)
    const key = `${event.store}\u0000${kind}\u0000${event.mode}\u0000${extra.fair}`
    let set = commonSets.get(key)
    if (!set) {
      set = Object.freeze({
        'baton.lock.store': event.store, 'baton.lock.kind': kind, 'baton.lock.mode': event.mode,
        ...(extra.fair !== undefined ? { 'baton.lock.fair': extra.fair } : {}),
      })
      commonSets.set(key, set)
    }
    return set
  }
  const addedSets = new WeakMap<Otel.Attributes, Map<string, Otel.Attributes>>()
  /** `attributes` with one more key, the same object each time for the same key and value. */
  const plus = (attributes: Otel.Attributes, key: string, value: string): Otel.Attributes => {
    let sets = addedSets.get(attributes)
    if (!sets) addedSets.set(attributes, (sets = new Map()))
    const id = `${key}\u0000${value}`
    let set = sets.get(id)
    if (!set) sets.set(id, (set = Object.freeze({ ...attributes, [key]: value })))
    return set
  }
  /**
   * A span's own attributes (token, wait, name…) are set only on a span that
   * records: without an SDK, or with a sampler that drops it, they are never
   * built. Samplers see the common set at the span's start.
   */
  const describe = (span: Otel.Span, name: string, attributes: Otel.Attributes): void => {
    if (!span.isRecording()) return
    span.setAttributes(attributes)
    if (lockNames) span.setAttribute('baton.lock.name', name)
  }

  const onWait = (message: unknown) => {
    const event = message as WaitEvent
    waiting.set(keyOf(event), { startedAt: monotonicNow(), epochMs: Date.now() })
  }

  const onAcquire = (message: unknown) => {
    const event = message as AcquireEvent & { kind?: string; fair?: boolean }
    if (waiting.size > 0) waiting.delete(keyOf(event))
    const now = Date.now()
    const attributes = common(event, event)
    const waitedS = event.waitedMs / 1000
    const span = tracer.startSpan('baton.lock.acquire', { kind: api.SpanKind.INTERNAL, startTime: now - event.waitedMs, attributes }, api.context.active())
    describe(span, event.name, {
      'baton.lock.outcome': 'granted',
      'baton.lock.wait.duration': waitedS,
      'baton.lock.token': event.token.toString(),
      'baton.lock.reentered': event.reentered,
      ...(event.attempts !== undefined ? { 'baton.lock.attempts': event.attempts } : {}),
    })
    if (event.handoff && span.isRecording()) span.addEvent('baton.lock.handover', { 'baton.lock.token': event.token.toString() }, now)
    span.end(now)
    acquireDuration.record(waitedS, plus(attributes, 'baton.lock.outcome', 'granted'))
    if (event.reentered) return
    activeHolds.add(1, attributes)
    const hold = tracer.startSpan('baton.lock.hold', { startTime: now, attributes }, api.context.active())
    describe(hold, event.name, { 'baton.lock.token': event.token.toString() })
    held.set(keyOf(event), { span: hold, startedAt: monotonicNow(), attributes })
    if (held.size > maxTracked) {
      // A hold whose end this process never hears of (a lease handed to another process): stop following the oldest.
      const [oldest] = held.keys()
      end(oldest!, 'untracked')
    }
  }

  function end(key: string, how: 'released' | 'lost' | 'untracked'): Held | undefined {
    const hold = held.get(key)
    if (!hold) return undefined
    held.delete(key)
    activeHolds.add(-1, hold.attributes)
    if (how !== 'untracked') holdDuration.record((monotonicNow() - hold.startedAt) / 1000, plus(hold.attributes, 'baton.lock.end', how))
    hold.span.setAttribute('baton.lock.end', how)
    return hold
  }

  const onRelease = (message: unknown) => {
    end(keyOf(message as HoldEvent), 'released')?.span.end()
  }

  const onLost = (message: unknown) => {
    const event = message as LostEvent
    const cause = event.expired ? 'expired' : 'taken'
    losses.add(1, plus(common(event), 'baton.lock.loss.cause', cause))
    const hold = end(keyOf(event), 'lost')
    if (!hold) return
    hold.span.addEvent('baton.lock.lost', { 'baton.lock.loss.cause': cause, 'exception.message': event.error.message })
    hold.span.setStatus({ code: api.SpanStatusCode.ERROR, message: `lease lost (${cause})` })
    hold.span.end()
  }

  const onGiveUp = (message: unknown) => {
    const event = message as GiveUpEvent
    const key = keyOf(event)
    const started = waiting.get(key)
    waiting.delete(key)
    const cause = event.code.toLowerCase()
    const attributes = common(event, event)
    timeouts.add(1, plus(attributes, 'baton.lock.timeout.cause', cause))
    const waitedMs = started ? monotonicNow() - started.startedAt : 0
    acquireDuration.record(waitedMs / 1000, plus(attributes, 'baton.lock.outcome', cause))
    const now = Date.now()
    const span = tracer.startSpan('baton.lock.acquire', { startTime: started ? started.epochMs : now, attributes }, api.context.active())
    describe(span, event.name, { 'baton.lock.outcome': cause, 'baton.lock.wait.duration': waitedMs / 1000, 'baton.lock.attempts': event.attempts })
    span.setStatus({ code: api.SpanStatusCode.ERROR, message: event.code })
    span.end(now)
  }

  const onRenewFailed = (message: unknown) => {
    const event = message as RenewFailedEvent
    held.get(keyOf(event))?.span.addEvent('baton.lock.renewal_failed', {
      'exception.message': event.error.message, 'baton.lock.remaining': event.remainingMs / 1000,
    })
  }

  const subscriptions: [typeof channels[keyof typeof channels], (message: unknown) => void][] = [
    [channels.wait, onWait], [channels.acquire, onAcquire], [channels.release, onRelease], [channels.lost, onLost], [channels.giveUp, onGiveUp],
    [channels.renewFailed, onRenewFailed],
  ]
  for (const [channel, listener] of subscriptions) channel.subscribe(listener)
  const inject = (headers: Record<string, string>) => api.propagation.inject(api.context.active(), headers)
  if (options.propagate !== false) traceContext.inject = inject
  return () => {
    if (traceContext.inject === inject) traceContext.inject = undefined
    for (const [channel, listener] of subscriptions) channel.unsubscribe(listener)
    for (const key of [...held.keys()]) end(key, 'untracked')?.span.end()
    waiting.clear()
  }
}

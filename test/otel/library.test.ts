/**
 * baton/otel with the OpenTelemetry SDK's in-memory exporters: one scripted
 * scenario (a grant, a hand-over, a timeout, a forced release) on the memory
 * store and on a real Redis; the span tree under the caller's span, the
 * attributes, the events and the metric values; a renewal that fails (a paused
 * Redis) as an event on the hold span before its loss.
 */
import assert from 'node:assert/strict'
import { createServer, request as httpRequest, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { context, metrics, propagation, trace, type Attributes, type Context, type TextMapPropagator, type TextMapSetter } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { AggregationTemporality, MeterProvider, MetricReader, type DataPoint, type Histogram } from '@opentelemetry/sdk-metrics'
import { connect, isBatonError, type Baton } from '../../src/index.js'
import { instrument } from '../../src/otel/index.js'
import { startRedis, type RedisServer } from '../harness/servers.js'
import { startBatonServer } from '../harness/baton-server.js'
import { ms } from '../harness/timing.js'

class TestReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE })
  }
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

const spans = new InMemorySpanExporter()
const reader = new TestReader()
const tracer = () => trace.getTracer('test')

/** The W3C traceparent header, as an SDK's propagator writes it (the tests bring no SDK propagator package). */
const w3c: TextMapPropagator = {
  inject(ctx: Context, carrier: unknown, setter: TextMapSetter) {
    const span = trace.getSpanContext(ctx)
    if (span) setter.set(carrier, 'traceparent', `00-${span.traceId}-${span.spanId}-0${span.traceFlags}`)
  },
  extract: (ctx: Context) => ctx,
  fields: () => ['traceparent'],
}

before(() => {
  propagation.setGlobalPropagator(w3c)
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }))
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }))
})

/** Every data point of a metric whose attributes include `match`. */
async function points(name: string, match: Attributes = {}): Promise<DataPoint<number | Histogram>[]> {
  const { resourceMetrics } = await reader.collect()
  const found = resourceMetrics.scopeMetrics.filter((s) => s.scope.name === 'baton').flatMap((s) => s.metrics).find((m) => m.descriptor.name === name)
  return (found?.dataPoints ?? []).filter((p) => Object.entries(match).every(([k, v]) => p.attributes[k] === v)) as DataPoint<number | Histogram>[]
}
const sum = async (name: string, match: Attributes = {}) => (await points(name, match)).reduce((total, p) => total + (p.value as number), 0)
const count = async (name: string, match: Attributes = {}) => (await points(name, match)).reduce((total, p) => total + (p.value as Histogram).count, 0)

/**
 * The scenario, inside the caller's span "handle request": A takes the lock; B
 * waits and is handed it when A releases; C gives up after a short wait; the
 * lock is then released by force, so B loses its hold.
 */
async function scenario(baton: Baton, name: string): Promise<{ root: ReadableSpan; tokens: bigint[] }> {
  return tracer().startActiveSpan('handle request', async (root) => {
    const lock = baton.mutex(name, { ttl: '30s', fair: true })
    const a = await lock.acquire({ wait: 0 })
    const waiting = lock.acquire({ wait: ms(30_000) })
    await waitUntil(async () => ((await baton.inspect(name))?.waiters.length ?? 0) === 1)
    await a.release()
    const b = await waiting
    await assert.rejects(lock.acquire({ wait: 50 }), (e) => isBatonError(e, 'LOCK_TIMEOUT'))
    const lost = new Promise((resolve) => b.signal.addEventListener('abort', resolve, { once: true }))
    assert.equal(await baton.forceRelease(name), true)
    await lost
    root.end()
    return { root: root as unknown as ReadableSpan, tokens: [a.token, b.token] }
  })
}

async function waitUntil(check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ms(20_000)
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out waiting for the scenario to reach its next step')
    await new Promise((r) => setTimeout(r, 10))
  }
}

function checkScenario(store: string, root: ReadableSpan, tokens: bigint[]): void {
  const traceId = root.spanContext().traceId
  const mine = spans.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId && s !== root && s.name.startsWith('baton.'))
  for (const span of mine) assert.equal(span.parentSpanContext?.spanId, root.spanContext().spanId, `${span.name} is a child of the caller's span`)
  const acquires = mine.filter((s) => s.name === 'baton.lock.acquire')
  const holds = mine.filter((s) => s.name === 'baton.lock.hold')
  assert.deepEqual(acquires.map((s) => s.attributes['baton.lock.outcome']).sort(), ['granted', 'granted', 'lock_timeout'])
  for (const span of acquires) {
    assert.equal(span.attributes['baton.lock.store'], store)
    assert.equal(span.attributes['baton.lock.kind'], 'mutex')
    assert.equal(span.attributes['baton.lock.mode'], 'exclusive')
    assert.equal(span.attributes['baton.lock.fair'], true)
    assert.equal(typeof span.attributes['baton.lock.wait.duration'], 'number')
    assert.equal(span.attributes['baton.lock.name'], undefined, 'no lock name unless allowed')
  }
  const granted = acquires.filter((s) => s.attributes['baton.lock.outcome'] === 'granted')
  assert.deepEqual(granted.map((s) => s.attributes['baton.lock.token']).sort(), tokens.map(String).sort())
  // Attempts sent to the store: one for the free lock; at least one for the hand-over and the timeout.
  assert.equal(granted.find((s) => s.attributes['baton.lock.token'] === String(tokens[0]))!.attributes['baton.lock.attempts'], 1)
  for (const span of acquires) assert.ok((span.attributes['baton.lock.attempts'] as number) >= 1, `${String(span.attributes['baton.lock.outcome'])}: attempts`)
  const handedOver = granted.find((s) => s.attributes['baton.lock.token'] === String(tokens[1]))!
  assert.deepEqual(handedOver.events.map((e) => e.name), ['baton.lock.handover'])
  const timedOut = acquires.find((s) => s.attributes['baton.lock.outcome'] === 'lock_timeout')!
  assert.equal(timedOut.status.code, 2 /* ERROR */)

  assert.equal(holds.length, 2)
  const [released, lost] = [String(tokens[0]), String(tokens[1])].map((t) => holds.find((s) => s.attributes['baton.lock.token'] === t)!)
  assert.equal(released!.attributes['baton.lock.end'], 'released')
  assert.equal(lost!.attributes['baton.lock.end'], 'lost')
  assert.deepEqual(lost!.events.map((e) => [e.name, e.attributes?.['baton.lock.loss.cause']]), [['baton.lock.lost', 'taken']])
}

describe('baton/otel: spans and metrics from the diagnostics channels', () => {
  let stop: () => void
  let redis: RedisServer
  before(async () => {
    stop = await instrument()
    redis = await startRedis()
  })
  after(async () => {
    stop()
    await redis.stop()
  })

  for (const store of ['memory', 'redis'] as const) {
    it(`on ${store}: the span tree under the caller's span, its attributes and events, and the metric values`, async () => {
      const baton = store === 'memory' ? await connect() : await connect(redis.url)
      const base = { 'baton.lock.store': baton.store }
      const before = {
        granted: await count('baton.lock.acquire.duration', { ...base, 'baton.lock.outcome': 'granted' }),
        timeouts: await sum('baton.lock.timeouts', { ...base, 'baton.lock.timeout.cause': 'lock_timeout' }),
        losses: await sum('baton.lock.losses', { ...base, 'baton.lock.loss.cause': 'taken' }),
        released: await count('baton.lock.hold.duration', { ...base, 'baton.lock.end': 'released' }),
        lost: await count('baton.lock.hold.duration', { ...base, 'baton.lock.end': 'lost' }),
      }
      try {
        const { root, tokens } = await scenario(baton, `otel/${Math.random().toString(36).slice(2)}`)
        checkScenario(baton.store, root, tokens)
        assert.equal(await count('baton.lock.acquire.duration', { ...base, 'baton.lock.outcome': 'granted' }), before.granted + 2)
        assert.equal(await sum('baton.lock.timeouts', { ...base, 'baton.lock.timeout.cause': 'lock_timeout' }), before.timeouts + 1)
        assert.equal(await sum('baton.lock.losses', { ...base, 'baton.lock.loss.cause': 'taken' }), before.losses + 1)
        assert.equal(await count('baton.lock.hold.duration', { ...base, 'baton.lock.end': 'released' }), before.released + 1)
        assert.equal(await count('baton.lock.hold.duration', { ...base, 'baton.lock.end': 'lost' }), before.lost + 1)
        assert.equal(await sum('baton.lock.active_holds', base), 0, 'every hold ended')
        const [histogram] = await points('baton.lock.acquire.duration', { ...base, 'baton.lock.outcome': 'granted' })
        assert.ok((histogram!.value as Histogram).sum! >= 0)
      } finally {
        await baton.close()
      }
    })
  }

  it('a renewal that fails (Redis paused past the command timeout) is an event on the hold span, before its loss', async () => {
    // Short enough that the loss comes soon; the command timeout shorter
    // still, so at least one renewal fails (times out) before the deadline.
    const ttl = ms(3000)
    const baton = await connect(redis.url, { commandTimeout: Math.round(ttl / 6) })
    let paused = false
    try {
      const name = `otel/renewal-${Math.random().toString(36).slice(2)}`
      const lease = await baton.mutex(name, { ttl }).acquire({ autoExtend: true })
      const lost = new Promise((resolve) => lease.signal.addEventListener('abort', resolve, { once: true }))
      redis.pause()
      paused = true
      await lost
      redis.resume()
      paused = false
      await lease.release().catch(() => {})
      const hold = spans.getFinishedSpans().find((s) => s.name === 'baton.lock.hold' && s.attributes['baton.lock.token'] === String(lease.token))
      assert.ok(hold, 'the hold span ended')
      const names = hold.events.map((e) => e.name)
      assert.ok(names.includes('baton.lock.renewal_failed'), `events: ${names.join(', ')}`)
      assert.ok(names.indexOf('baton.lock.renewal_failed') < names.indexOf('baton.lock.lost'), `events in order: ${names.join(', ')}`)
      const failed = hold.events.find((e) => e.name === 'baton.lock.renewal_failed')!
      assert.equal(typeof failed.attributes?.['exception.message'], 'string')
      assert.ok((failed.attributes?.['baton.lock.remaining'] as number) >= 0)
      assert.equal(hold.attributes['baton.lock.end'], 'lost')
    } finally {
      if (paused) redis.resume()
      await baton.close()
    }
  })

  it('puts the lock name on spans only when allowed, and never on metrics', async () => {
    stop()
    stop = await instrument({ lockNames: true })
    const baton = await connect()
    try {
      const name = `otel/named-${Math.random().toString(36).slice(2)}`
      const lease = await baton.mutex(name).acquire()
      await lease.release()
      const named = spans.getFinishedSpans().filter((s) => s.attributes['baton.lock.name'] === name)
      assert.deepEqual(named.map((s) => s.name).sort(), ['baton.lock.acquire', 'baton.lock.hold'])
      for (const metric of ['baton.lock.acquire.duration', 'baton.lock.hold.duration', 'baton.lock.active_holds']) {
        for (const point of await points(metric)) assert.equal(point.attributes['baton.lock.name'], undefined, metric)
      }
    } finally {
      await baton.close()
    }
  })

  it('the http:// store sends the caller\'s trace (W3C traceparent) to the lock server', async () => {
    const server = await startBatonServer()
    // A forwarding proxy in front of the server that notes the traceparent of each request.
    const seen: { path: string; traceparent: string | undefined }[] = []
    const proxy: Server = createServer((incoming, answer) => {
      seen.push({ path: incoming.url ?? '', traceparent: incoming.headers.traceparent as string | undefined })
      const upstream = httpRequest({ host: '127.0.0.1', port: server.port, path: incoming.url, method: incoming.method, headers: incoming.headers }, (reply) => {
        answer.writeHead(reply.statusCode ?? 502, reply.headers)
        reply.pipe(answer)
      })
      upstream.on('error', () => answer.destroy())
      incoming.pipe(upstream)
    })
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
    const baton = await connect(`http://127.0.0.1:${(proxy.address() as AddressInfo).port}`)
    try {
      const traceId = await tracer().startActiveSpan('handle request', async (root) => {
        const lease = await baton.mutex(`otel/http-${Math.random().toString(36).slice(2)}`).acquire()
        await lease.release()
        root.end()
        return root.spanContext().traceId
      })
      const acquires = seen.filter((r) => r.path.endsWith('/acquire'))
      assert.equal(acquires.length, 1)
      assert.match(acquires[0]!.traceparent ?? '', new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`))
      const [acquireSpan] = spans.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId && s.name === 'baton.lock.acquire')
      assert.equal(acquireSpan!.attributes['baton.lock.store'], 'http')
    } finally {
      await baton.close()
      proxy.closeAllConnections()
      proxy.close()
      await server.stop()
    }
  })
})

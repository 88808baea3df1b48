/**
 * O1. What OpenTelemetry instrumentation costs the uncontended pair
 * (acquire + release, one name, one flow) in this process: not installed;
 * baton/otel's instrument() with the api but no SDK (every span a no-op);
 * instrument() with the SDK's tracer and meter providers and an exporter
 * that drops what it gets. Rounds alternate between the three so machine
 * load falls on each alike; memory store and Redis.
 */
import * as api from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { MeterProvider } from '@opentelemetry/sdk-metrics'
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base'
import { connect } from '../../src/index.js'
import { instrument } from '../../src/otel/index.js'
import { fmtNum, fmtRatio, median, table } from '../report.js'
import type { BenchContext, Scenario, ScenarioResult } from '../types.js'

type Mode = 'off' | 'api' | 'sdk'
const MODES: readonly Mode[] = ['off', 'api', 'sdk']
const LABEL: Record<Mode, string> = {
  off: 'not instrumented',
  api: 'instrument(), no SDK',
  sdk: 'instrument(), SDK + no-op exporter',
}

const dropAll: SpanExporter = {
  export: (_spans, done) => done({ code: 0 }),
  shutdown: async () => {},
}

/** Sets the mode's globals up; returns what undoes them. */
async function install(mode: Mode): Promise<() => Promise<void>> {
  if (mode === 'off') return async () => {}
  if (mode === 'api') {
    const stop = await instrument({ api })
    return async () => stop()
  }
  const contexts = new AsyncLocalStorageContextManager().enable()
  const tracing = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropAll)] })
  const meters = new MeterProvider()
  api.context.setGlobalContextManager(contexts)
  api.trace.setGlobalTracerProvider(tracing)
  api.metrics.setGlobalMeterProvider(meters)
  const stop = await instrument({ api })
  return async () => {
    stop()
    await tracing.shutdown()
    await meters.shutdown()
    api.trace.disable()
    api.metrics.disable()
    api.context.disable()
  }
}

export const otel: Scenario = {
  id: 'otel',
  title: 'O1. OpenTelemetry: the uncontended pair, instrumented or not',
  async run(ctx: BenchContext): Promise<ScenarioResult> {
    const rounds = ctx.pick(7, 2)
    const roundMs = ctx.pick(700, 200)
    const rows: string[][] = []
    for (const [store, url] of [['memory', 'memory://'], ['Redis', ctx.redisUrl]] as const) {
      const baton = await connect(url)
      const mutex = baton.mutex('bench/otel', { ttl: 10_000 })
      const pair = async () => (await mutex.acquire()).release()
      const perPair = new Map<Mode, number[]>(MODES.map((mode) => [mode, []]))
      try {
        for (let i = 0; i < 200; i++) await pair() // connections and scripts warm
        for (let round = 0; round < rounds; round++) {
          for (const mode of MODES) {
            const uninstall = await install(mode)
            try {
              for (let i = 0; i < 50; i++) await pair()
              let pairs = 0
              const started = performance.now()
              while (performance.now() - started < roundMs) {
                await pair()
                pairs++
              }
              perPair.get(mode)!.push(((performance.now() - started) * 1000) / pairs)
            } finally {
              await uninstall()
            }
          }
        }
      } finally {
        await baton.close()
      }
      const off = median(perPair.get('off')!)
      for (const mode of MODES) {
        const us = median(perPair.get(mode)!)
        rows.push([store, LABEL[mode], fmtNum(us, 1), mode === 'off' ? '' : `+${fmtNum(us - off, 1)}`, fmtRatio(us / off)])
      }
      ctx.log(`  ${store}: ${MODES.map((mode) => `${mode} ${fmtNum(median(perPair.get(mode)!), 1)} µs`).join(', ')}`)
    }
    const markdown = [
      `### ${this.title}`,
      '',
      table(['store', 'instrumentation', 'µs per pair (median of rounds)', 'added µs', 'vs not instrumented'], rows),
      '',
      `One flow, one name, acquire + release; ${rounds} rounds of ${roundMs} ms per mode, alternating. Each pair makes an acquire span, a hold span and four metric records when instrumented.`,
      '',
    ].join('\n')
    return { markdown, summary: [] }
  },
}

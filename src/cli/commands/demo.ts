import { channels, connect } from '../../index.js'
import type { AcquireEvent } from '../../internal-api.js'
import { DURATIONS_NOTE, durationFlag, EXIT, intFlag, parse, print, STORE_OPTION, type Command } from '../common.js'

export interface DemoOptions {
  url?: string
  workers: number
  seconds: number
  out: (line: string) => void
}

/**
 * Workers contending for one lock, printing every grant with its fencing
 * token and whether it was handed over by a release. Runs on the embedded
 * store unless a URL is given.
 */
export async function demo(options: DemoOptions): Promise<void> {
  const baton = await connect(options.url)
  const name = 'demo/nightly-report'
  const lock = baton.mutex(name, { ttl: '5s' })
  const names = new Map<string, string>()
  let grants = 0
  let handoffs = 0
  const onAcquire = (message: unknown) => {
    const event = message as AcquireEvent
    if (event.name !== name || event.reentered) return
    grants++
    if (event.handoff) handoffs++
  }
  channels.acquire.subscribe(onAcquire)
  options.out(`baton demo: ${options.workers} workers contend for "${name}" on ${baton.store} for ${options.seconds}s`)
  const stopAt = Date.now() + options.seconds * 1000
  await Promise.all(
    Array.from({ length: options.workers }, async (_, index) => {
      const worker = `worker ${index + 1}`
      while (Date.now() < stopAt) {
        const asked = performance.now()
        await lock.using(async (lease) => {
          names.set(lease.owner, worker)
          const waited = (performance.now() - asked).toFixed(1)
          options.out(`${worker.padEnd(9)} holds it: token ${lease.token}, waited ${waited} ms, ${lease.remainingMs()} ms of lease left`)
          await new Promise((r) => setTimeout(r, 100 + Math.random() * 200))
        })
      }
    }),
  )
  channels.acquire.unsubscribe(onAcquire)
  options.out(`${grants} grants, ${handoffs} handed over directly by a release; tokens only ever went up.`)
  await baton.close()
}

const DEMO_USAGE = 'usage: baton demo [--store URL] [--workers N] [--seconds 3s]'

export const demoCommand: Command = {
  usage: DEMO_USAGE,
  help: `${DEMO_USAGE}

Workers contending for one lock, printing every grant with its fencing token
and whether a release handed it over directly. Runs on the embedded store
(memory://) unless --store or BATON_URL names another.

options:
  --store URL    the store (default: BATON_URL, else memory://)
  --workers N    contending workers, 1 to 1000 (default 4)
  --seconds D    how long to run (default 3s)
${DURATIONS_NOTE}

example:
  baton demo --store redis://127.0.0.1:6379 --workers 8`,
  async main(args) {
    const parsed = parse(args, { ...STORE_OPTION, workers: { type: 'string' }, seconds: { type: 'string' } }, { min: 0, max: 0, names: '' })
    if (!parsed) {
      print(this.help)
      return EXIT.ok
    }
    const { values } = parsed
    const url = values.store ?? process.env.BATON_URL
    await demo({
      ...(url ? { url } : {}),
      workers: intFlag(values.workers ?? '4', '--workers', 1, 1000),
      seconds: durationFlag(values.seconds ?? '3s', '--seconds') / 1000,
      out: print,
    })
    return EXIT.ok
  },
}

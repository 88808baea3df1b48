import { connect } from '../../connect.js'
import type { AcquireEvent } from '../../core/events.js'
import { channels } from '../../core/events.js'

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

/** The chaos client's own readings: what it records must hold however the process is paused between two lines. */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { connect } from '../../src/index.js'
import { check } from '../../src/chaos/checker.js'
import { runClient, type Probed } from '../../src/chaos/client.js'
import { historyNow, type HistoryEvent } from '../../src/chaos/history.js'
import type { Step } from '../../src/chaos/plan.js'
import { ms } from '../harness/timing.js'

test('an extend answered in time is recorded as renewed in time, though the process stops as it records the completion', async () => {
  // A SIGSTOP is acted on as the process leaves a system call: the write of a
  // record is where a stop lands. Here that write blocks past the lease's end,
  // however long the lease has left (the ttl only needs to outlast the way from
  // the grant to the extend's answer, on a busy machine too).
  const ttlMs = ms(1000)
  const baton = await connect('memory://')
  const events: HistoryEvent[] = []
  const kinds = new Map<string, { kind: string; lease?: string }>()
  const active = new Map<string, Probed>()
  const startedAt = historyNow()
  try {
    const step: Step = {
      action: 'hold', primitive: 'mutex', names: [0], side: 'exclusive', weight: 1, wait: { kind: 'try' }, autoExtend: false,
      holdMs: 100, extendAt: 20, writes: 0, probesAt: [], lapse: false,
    }
    await runClient({
      process: 1, client: 0, baton, steps: [step], prefix: 'chaos-client-test', ttlMs, stopAt: historyNow() + 1,
      write: async () => true, active,
      record: (event) => {
        events.push(event)
        if (event.type === 'invoke') kinds.set(event.op, { kind: event.kind, ...(event.lease ? { lease: event.lease } : {}) })
        const call = event.type === 'complete' ? kinds.get(event.op) : undefined
        const lease = call?.kind === 'extend' && call.lease ? active.get(call.lease) : undefined
        if (lease) {
          while (lease.remainingMs() > 0) { /* stopped on the way out of the write */ }
          const until = historyNow() + 5
          while (historyNow() < until) { /* and a little past the lease's end */ }
        }
      },
    })
  } finally {
    await baton.close()
  }
  const renewals = events.filter((e): e is Extract<HistoryEvent, { type: 'renew' }> => e.type === 'renew')
  assert.equal(renewals.length, 1, JSON.stringify(events))
  assert.ok(renewals[0]!.deadline > renewals[0]!.at, `the renewal's reading: ${JSON.stringify(renewals[0])}`)
  const verdict = check({ seed: 1, store: 'memory', events, ttlMs, startedAt, endedAt: historyNow() })
  assert.deepEqual(verdict.violations.filter((f) => f.property === 'renewed-after-lapse'), [])
})

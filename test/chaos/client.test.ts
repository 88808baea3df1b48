/** The chaos client's own readings: what it records must hold however the process is paused between two lines. */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { connect } from '../../src/index.js'
import { check } from '../../src/chaos/checker.js'
import { runClient } from '../../src/chaos/client.js'
import { historyNow, type HistoryEvent } from '../../src/chaos/history.js'
import type { Step } from '../../src/chaos/plan.js'

test('an extend answered in time is recorded as renewed in time, though the process stops as it records the completion', async () => {
  // A SIGSTOP is acted on as the process leaves a system call: the write of a
  // record is where a stop lands. Here that write blocks past the lease's end.
  const ttlMs = 300
  const baton = await connect('memory://')
  const events: HistoryEvent[] = []
  const kinds = new Map<string, string>()
  const startedAt = historyNow()
  try {
    const step: Step = {
      action: 'hold', primitive: 'mutex', names: [0], side: 'exclusive', weight: 1, wait: { kind: 'try' }, autoExtend: false,
      holdMs: 100, extendAt: 20, writes: 0, probesAt: [], lapse: false,
    }
    await runClient({
      process: 1, client: 0, baton, steps: [step], prefix: 'chaos-client-test', ttlMs, stopAt: historyNow() + 1,
      write: async () => true, active: new Map(),
      record: (event) => {
        events.push(event)
        if (event.type === 'invoke') kinds.set(event.op, event.kind)
        if (event.type === 'complete' && kinds.get(event.op) === 'extend') {
          const until = historyNow() + 2 * ttlMs
          while (historyNow() < until) { /* stopped on the way out of the write */ }
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

/**
 * The stall probe (src/core/clock.ts) when a second stall follows the first
 * closely, as a process resumed from SIGSTOP on a busy machine does: an
 * answer that sat in its socket through the first stall and is read after
 * the second must still count from before the first. Found by the chaos
 * suite (`--store http-memory --seed 25 --seconds 20 --faults
 * client-stall,partition`): a semaphore grant read 475 ms after a 2.7 s stop
 * was counted from the start of a short stall after the resume, and the
 * process held 2 of 2 permits beside another holder of both.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { earliestArrival, monotonicNow, watchForStalls } from '../../src/core/clock.js'

const pause = (n: number) => new Promise((resolve) => setTimeout(resolve, n))
const busy = (n: number) => { const until = monotonicNow() + n; while (monotonicNow() < until) { /* the loop stands still */ } }

test('an answer read after two close stalls counts from before the first', async (t) => {
  watchForStalls()
  await pause(50)
  const beforeFirst = monotonicNow()
  busy(300)
  const firstEnded = monotonicNow()
  await pause(30) // the probe turns and sees the first stall
  const secondBegan = monotonicNow()
  busy(100)
  await pause(30) // the probe sees the second one
  // Stalls further apart than the probe's window are two stalls (the machine was that busy): nothing to check.
  if (secondBegan - firstEnded > 400) return t.skip(`the loop took ${Math.round(secondBegan - firstEnded)} ms between the stalls`)
  assert.ok(earliestArrival() <= beforeFirst, 'counted from the second stall, not the first')
})

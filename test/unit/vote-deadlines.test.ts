/**
 * A Redlock client's vote counts share one timer (VoteDeadlines): a count
 * still open at its own deadline expires, a finished one never does, and a
 * later count keeps its own, later deadline.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { VoteDeadlines } from '../../src/drivers/redlock/quorum.js'

/** Expiry goes through setImmediate (answers waiting in the loop are read first): let it run. */
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

describe('VoteDeadlines', () => {
  // A clock of the test's own, and the sweep called by hand: nothing here
  // depends on how fast the machine is.
  it('expires only the counts still open at their own deadline', async () => {
    let now = 0
    const deadlines = new VoteDeadlines(50, () => now)
    const expired: string[] = []
    const finished = deadlines.add(() => expired.push('finished'))
    deadlines.add(() => expired.push('open'))
    finished.done = true
    now = 30
    deadlines.add(() => expired.push('later'))
    now = 60
    deadlines.sweep()
    await turn()
    assert.deepEqual(expired, ['open'], 'the open count expired, the finished one did not, the later one waits')
    now = 80
    deadlines.sweep()
    await turn()
    assert.deepEqual(expired, ['open', 'later'])
    deadlines.close()
  })

  it('expires a count once, and starts over once every count is done', async () => {
    let now = 0
    const deadlines = new VoteDeadlines(10, () => now)
    let count = 0
    deadlines.add(() => count++)
    now = 20
    deadlines.sweep()
    deadlines.sweep()
    await turn()
    assert.equal(count, 1)
    const next = deadlines.add(() => count++)
    next.done = true
    now = 40
    deadlines.sweep()
    await turn()
    assert.equal(count, 1)
    deadlines.close()
  })
})

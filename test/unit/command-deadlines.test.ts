/**
 * The Redis command connection bounds its commands with one timer
 * (CommandDeadlines) instead of ioredis' timer per command: a command still
 * unanswered at its deadline fails as ioredis' own timeout fails it, an
 * answered one is never touched, and each command keeps its own deadline.
 * (A frozen redis-server is covered by test/stores/redis.faults.test.ts.)
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { CommandDeadlines } from '../../src/drivers/redis/command-deadlines.js'

class FakeCommand {
  isResolved = false
  error: Error | undefined
  reject(error: Error): void {
    this.isResolved = true
    this.error = error
  }
  answer(): void {
    this.isResolved = true
  }
}

describe('CommandDeadlines', () => {
  // A clock of the test's own: deadlines are read on it and the sweep is
  // called by hand, so nothing here depends on how fast the machine is.
  it('fails only the commands unanswered at their own deadline', () => {
    let now = 0
    const deadlines = new CommandDeadlines(100, () => now)
    const answered = new FakeCommand()
    const lost = new FakeCommand()
    deadlines.track(answered)
    deadlines.track(lost)
    answered.answer()
    now = 60
    const late = new FakeCommand()
    deadlines.track(late)
    now = 150
    deadlines.sweep()
    assert.equal(lost.error?.message, 'Command timed out', 'the unanswered command failed at its deadline')
    assert.equal(answered.error, undefined, 'an answered command is left alone')
    assert.equal(late.isResolved, false, 'a command sent later is not failed at an earlier deadline')
    now = 161
    deadlines.sweep()
    assert.equal((late.error as Error | undefined)?.message, 'Command timed out', 'and fails at its own')
    // Many answered commands do not pile up, and the queue keeps working after.
    for (let i = 0; i < 5000; i++) {
      const command = new FakeCommand()
      deadlines.track(command)
      command.answer()
    }
    const last = new FakeCommand()
    deadlines.track(last)
    now = 300
    deadlines.sweep()
    assert.equal(last.error?.message, 'Command timed out')
    deadlines.close()
  })

  it('a command answered with an error does not hold the commands after it (ioredis sets isResolved only for replies)', () => {
    let now = 0
    const deadlines = new CommandDeadlines(10_000, () => now)
    // As ioredis' Command: an error reply calls reject, which leaves isResolved false.
    const refused = { isResolved: false, reject(_error: Error) {} }
    deadlines.track(refused)
    refused.reject(new Error("ERR unknown subcommand 'SETINFO'"))
    for (let i = 0; i < 5000; i++) {
      const command = new FakeCommand()
      deadlines.track(command)
      command.answer()
    }
    // Read through the queue's own fields: what it keeps alive is the point.
    const kept = (deadlines as unknown as { queue: { items: unknown[]; head: number } }).queue
    assert.ok(kept.items.length - kept.head <= 1, `${kept.items.length - kept.head} commands kept behind a refused one`)
    deadlines.close()
  })

  it('its own timer fails a command left unanswered', async () => {
    const deadlines = new CommandDeadlines(5)
    const lost = new FakeCommand()
    deadlines.track(lost)
    // Waits for the outcome, however long the machine takes; asserts no duration.
    while (!lost.isResolved) await new Promise((resolve) => setTimeout(resolve, 5))
    assert.equal(lost.error?.message, 'Command timed out')
    deadlines.close()
  })
})

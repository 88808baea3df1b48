import type { Redis } from 'ioredis'
import { DeadlineQueue } from '../../core/deadline-queue.js'

/** What a deadline needs of an ioredis command (the same two members ioredis' own timeout uses). */
interface InFlight {
  readonly isResolved: boolean
  reject(error: Error): void
  /**
   * Set here when the command fails: ioredis sets `isResolved` only for a
   * reply, so a command answered with an error (ioredis' own
   * `CLIENT SETINFO` at connect, which Redis before 7.2 refuses) would stay
   * at the front of the queue until its deadline and keep every command sent
   * after it alive that long: measured, 10,000 commands a second held for the
   * whole timeout, promoted to the old generation and collected by full GCs.
   */
  failed?: boolean
}

const done = (command: InFlight): boolean => command.isResolved || command.failed === true

/**
 * One timer per connection bounds every command sent on it (DeadlineQueue),
 * in place of ioredis' `commandTimeout`, which starts and clears a timer
 * per command (measured: ~2.5 µs of client CPU per acquire+release pair,
 * 8%). A command past its deadline fails as ioredis' own timeout fails it
 * ("Command timed out"); a command ioredis sends again after a reconnect
 * keeps its first deadline.
 */
export class CommandDeadlines {
  private readonly queue: DeadlineQueue<InFlight>

  /** `now`: the clock the deadlines are read on (a test passes its own, so it asserts no timing). */
  constructor(timeoutMs: number, now?: () => number) {
    this.queue = new DeadlineQueue<InFlight>(timeoutMs, done, (command) => command.reject(new Error('Command timed out')), now)
  }

  track(command: InFlight): void {
    const reject = command.reject
    command.reject = (error: Error) => {
      command.failed = true
      reject.call(command, error)
    }
    this.queue.add(command)
  }

  /** Fails what is past its deadline (the timer calls it). */
  readonly sweep = (): void => this.queue.sweep()

  close(): void {
    this.queue.close()
  }
}

/**
 * Tunes the command connection of one Redis: every command bounded by
 * `timeoutMs` with one CommandDeadlines (see there). The commands of one
 * event-loop turn were written together here (the socket corked until the
 * turn's end); the driver's script calls now go as one EVALSHA per turn
 * (ScriptBatch in ./scripts.ts), which leaves nothing for a cork to gather,
 * so it was dropped with its timer per turn (docs/hot-path.md).
 */
export function tuneCommandConnection(client: Redis, timeoutMs: number | undefined): void {
  if (timeoutMs === undefined) return
  const deadlines = new CommandDeadlines(timeoutMs)
  type Send = Redis['sendCommand']
  const send: Send = client.sendCommand
  client.sendCommand = function (this: Redis, command, stream) {
    deadlines.track(command as unknown as InFlight)
    return send.call(this, command, stream)
  } as Send
  client.once('end', () => deadlines.close())
}

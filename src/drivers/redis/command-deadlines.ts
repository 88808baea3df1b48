import type { Redis } from 'ioredis'

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
 * One timer per connection bounds every command sent on it, in place of
 * ioredis' `commandTimeout`, which starts and clears a timer per command
 * (measured: ~2.5 µs of client CPU per acquire+release pair, 8%). All
 * commands of a connection share one timeout, so their deadlines come in
 * the order they were sent: a queue, whose answered front is dropped as
 * commands are sent, and one timer that wakes for the oldest deadline only
 * (about once per timeout under steady load). A command past its deadline
 * fails as ioredis' own timeout fails it ("Command timed out"); a command
 * ioredis sends again after a reconnect keeps its first deadline.
 */
export class CommandDeadlines {
  private commands: InFlight[] = []
  private deadlines: number[] = []
  private head = 0
  private timer: NodeJS.Timeout | undefined

  /** `now`: the clock the deadlines are read on (a test passes its own, so it asserts no timing). */
  constructor(private readonly timeoutMs: number, private readonly now: () => number = () => performance.now()) {}

  track(command: InFlight): void {
    const reject = command.reject
    command.reject = (error: Error) => {
      command.failed = true
      reject.call(command, error)
    }
    const commands = this.commands
    while (this.head < commands.length && done(commands[this.head]!)) this.head++
    if (this.head === commands.length) {
      commands.length = 0
      this.deadlines.length = 0
      this.head = 0
    } else if (this.head > 1024 && this.head * 2 > commands.length) {
      this.commands = commands.slice(this.head)
      this.deadlines = this.deadlines.slice(this.head)
      this.head = 0
    }
    this.commands.push(command)
    this.deadlines.push(this.now() + this.timeoutMs)
    if (!this.timer) this.arm(this.timeoutMs)
  }

  private arm(ms: number): void {
    this.timer = setTimeout(this.sweep, Math.max(1, Math.ceil(ms)))
    // The connection keeps the process alive while a command is out.
    this.timer.unref()
  }

  /** Fails what is past its deadline and re-arms for the next one (the timer calls it). */
  readonly sweep = (): void => {
    clearTimeout(this.timer)
    this.timer = undefined
    const now = this.now()
    const { commands, deadlines } = this
    while (this.head < commands.length) {
      const command = commands[this.head]!
      if (!done(command)) {
        if (deadlines[this.head]! > now) return this.arm(deadlines[this.head]! - now)
        command.reject(new Error('Command timed out'))
      }
      this.head++
    }
  }

  close(): void {
    clearTimeout(this.timer)
    this.timer = undefined
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

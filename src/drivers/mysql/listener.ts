import mysql from 'mysql2'
import type { Connection, ConnectionOptions } from 'mysql2/promise'
import type { SqlSet } from './sql.js'
import { endConnection, isTransient, queryWithin } from './connection.js'

/** How often a client with waiters, holders or election observers looks at its wake-ups. */
export const POLL_MS = 50
const RECONNECT_MAX_MS = 1000

export interface PollerHandlers {
  /** One wake-up message (WakeRoutes' format). */
  onMessage(message: string): void
  /** An observed name's holders may have changed. */
  onChange(name: string): void
  /** The connection was lost and is back: what was sent meanwhile may have been missed. */
  onReconnect(): void
  /** Whether anything waits for wake-ups or changes: polling stops while nothing does. */
  wanted(): boolean
  /** The names election observers follow. */
  observed(): readonly string[]
  /** The names our owners wait for: the poll waits on the bell (bell.ts) of one's holder instead of sleeping. */
  waitedNames(): readonly string[]
}

/**
 * The one connection per client that reads the client's wake-ups (rows of
 * baton_wakes, written by the transactions that made them due) and the
 * change counters of observed names: MySQL has no LISTEN/NOTIFY, and no
 * sound way for one session to wake another (docs/stores/mysql.md weighs
 * named locks). A bounded poll, then: one indexed read every POLL_MS while
 * this client waits, holds or observes anything, none while it does not.
 * Outside the pool, so that it never queues behind operations.
 */
export class WakePoller {
  private connection: Connection | undefined
  private closed = false
  private running = false
  private lostConnection = false
  /** Bells got at once in a row (see pollOnce). */
  private unheld = 0
  private wakeLoop: (() => void) | undefined
  private timer: NodeJS.Timeout | undefined
  /** Messages dispatched and not yet deleted (the next poll deletes them): never dispatched twice. */
  private readonly dispatched = new Set<string>()
  /** Last change counter seen per observed name ('' for a name with no row). */
  private readonly seen = new Map<string, string>()

  constructor(
    private readonly config: ConnectionOptions,
    private readonly clientId: string,
    private readonly sql: SqlSet,
    private readonly commandTimeoutMs: number,
    private readonly handlers: PollerHandlers,
  ) {}

  /** Something may want wake-ups now: start polling if idle; `now`: poll at once (a new observer's first read). */
  kick(now = false): void {
    if (this.closed) return
    if (!this.running) {
      this.running = true
      void this.loop()
    } else if (now) {
      this.wakeLoop?.()
    }
  }

  async close(): Promise<void> {
    this.closed = true
    clearTimeout(this.timer)
    this.wakeLoop?.()
    const connection = this.connection
    this.connection = undefined
    await endConnection(connection)
  }

  private async loop(): Promise<void> {
    let failures = 0
    while (!this.closed && this.handlers.wanted()) {
      let waited = false
      try {
        waited = await this.pollOnce()
        failures = 0
      } catch (error) {
        if (isTransient(error)) {
          // The server's deadlock detector refused the wait on a bell (named
          // locks of several sessions waiting on each other for an instant):
          // nothing was missed, the rows are read by the next poll, without it.
          this.unheld = 2
        } else {
          this.drop()
          failures++
        }
      }
      if (!waited) await this.pause(failures === 0 ? POLL_MS : Math.min(RECONNECT_MAX_MS, POLL_MS * 2 ** failures))
    }
    this.running = false
    // A watch registered while the loop was ending.
    if (!this.closed && this.handlers.wanted()) this.kick()
  }

  /**
   * One round trip: deletes the wake-ups dispatched last time, blocks on the
   * bell of the client we wait for (at most one poll interval; bell.ts),
   * lets go of it at once, then reads this client's wake-ups and the change
   * counters of observed names. True when the bell wait stood in for the
   * pause between polls. A bell got at once is not held (its client has not
   * taken it, or is gone): twice running, and the pause runs instead, so
   * that nothing spins.
   */
  private async pollOnce(): Promise<boolean> {
    const connection = await this.connected()
    const statements = this.sql.statements
    const parts: string[] = []
    const acked = [...this.dispatched]
    if (acked.length > 0) parts.push(mysql.format(statements['ack-wakes'], [this.clientId, acked]))
    const waited = this.handlers.waitedNames()
    const bell = this.unheld < 2 && waited.length > 0
    const bellAt = parts.length + 1
    if (bell) parts.push(mysql.format(statements['bell-of-holder'], [[...waited], POLL_MS / 1000]))
    const wakesAt = parts.length + (bell ? 2 : 0)
    parts.push(mysql.format(statements['poll-wakes'], [this.clientId]))
    const names = this.handlers.observed()
    for (const name of this.seen.keys()) if (!names.includes(name)) this.seen.delete(name)
    const changesAt = wakesAt + 1
    if (names.length > 0) parts.push(mysql.format(statements['poll-changes'], [[...names]]))

    const started = performance.now()
    const [answer] = await queryWithin(connection, parts.join(';\n'), this.commandTimeoutMs + POLL_MS)
    const results = parts.length === 1 ? [answer] : (answer as unknown[]) // one answer per statement
    for (const id of acked) this.dispatched.delete(id)

    if (bell) {
      const [row] = results[bellAt] as { got: number | null }[]
      this.unheld = row?.got === 1 && performance.now() - started < 2 ? this.unheld + 1 : 0
    } else if (waited.length > 0) {
      this.unheld = 0 // paused once: try the bell again
    }
    for (const row of results[wakesAt] as { id: string; message: string }[]) {
      if (this.dispatched.has(row.id)) continue
      this.dispatched.add(row.id)
      this.handlers.onMessage(row.message)
    }
    if (names.length > 0) {
      const changes = results[changesAt] as { name: Buffer; changes: string }[]
      const now = new Map(changes.map((c) => [c.name.toString('utf8'), c.changes]))
      for (const name of names) {
        const counter = now.get(name) ?? ''
        if (this.seen.get(name) === counter) continue
        this.seen.set(name, counter)
        this.handlers.onChange(name)
      }
    }
    return bell && this.unheld < 2
  }

  /** The connection, opened again after a loss (then the handlers hear of it: messages may be missed meanwhile). */
  private async connected(): Promise<Connection> {
    if (this.connection) return this.connection
    const connection = mysql.createConnection(this.config).promise()
    await connection.connect().catch((error: unknown) => {
      connection.destroy()
      throw error
    })
    connection.on('error', () => this.drop(connection))
    if (this.closed) {
      connection.destroy()
      throw new Error('closed')
    }
    this.connection = connection
    if (this.lostConnection) {
      this.lostConnection = false
      this.handlers.onReconnect()
    }
    return connection
  }

  private drop(connection = this.connection): void {
    if (!connection || connection !== this.connection) return
    this.connection = undefined
    this.lostConnection = true
    connection.destroy()
  }

  private pause(delayMs: number): Promise<void> {
    return new Promise((resolve) => {
      this.wakeLoop = () => {
        this.wakeLoop = undefined
        clearTimeout(this.timer)
        resolve()
      }
      this.timer = setTimeout(() => this.wakeLoop?.(), delayMs)
      this.timer.unref()
    })
  }

  /** Observers read a name's state once when they start: the first poll reports every newly observed name. */
  forget(name: string): void {
    this.seen.delete(name)
  }
}

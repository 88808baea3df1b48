import mysql from 'mysql2'
import type { Connection, ConnectionOptions } from 'mysql2/promise'
import type { SqlSet } from './sql.js'

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
  /** The bell (bell.ts) of a client one of our owners waits for, if any: waited on instead of sleeping. */
  bell(): string | undefined
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
  /** Bells got at once in a row (see awaitBell). */
  private unheld = 0
  private wakeLoop: (() => void) | undefined
  private timer: NodeJS.Timeout | undefined
  /** Messages dispatched but not yet deleted: never dispatched twice. */
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
    await connection?.end().catch(() => connection.destroy())
  }

  private async loop(): Promise<void> {
    let failures = 0
    while (!this.closed && this.handlers.wanted()) {
      try {
        await this.pollOnce()
        failures = 0
      } catch {
        this.drop()
        failures++
      }
      if (failures === 0 && (await this.awaitBell())) continue
      await this.pause(failures === 0 ? POLL_MS : Math.min(RECONNECT_MAX_MS, POLL_MS * 2 ** failures))
    }
    this.running = false
    // A watch registered while the loop was ending.
    if (!this.closed && this.handlers.wanted()) this.kick()
  }

  private async pollOnce(): Promise<void> {
    const connection = await this.connected()
    const [rows] = (await connection.query({ sql: this.sql.statements['poll-wakes'], timeout: this.commandTimeoutMs }, [this.clientId])) as unknown as [
      { id: string; message: string }[],
    ]
    if (rows.length > 0) {
      for (const row of rows) {
        if (this.dispatched.has(row.id)) continue
        this.dispatched.add(row.id)
        this.handlers.onMessage(row.message)
      }
      const ids = rows.map((r) => r.id)
      await connection.query({ sql: this.sql.statements['ack-wakes'], timeout: this.commandTimeoutMs }, [this.clientId, ids])
      for (const id of ids) this.dispatched.delete(id)
    }
    const names = this.handlers.observed()
    for (const name of this.seen.keys()) if (!names.includes(name)) this.seen.delete(name)
    if (names.length > 0) {
      const [changes] = (await connection.query({ sql: this.sql.statements['poll-changes'], timeout: this.commandTimeoutMs }, [names])) as unknown as [
        { name: Buffer; changes: string }[],
      ]
      const now = new Map(changes.map((c) => [c.name.toString('utf8'), c.changes]))
      for (const name of names) {
        const counter = now.get(name) ?? ''
        if (this.seen.get(name) === counter) continue
        this.seen.set(name, counter)
        this.handlers.onChange(name)
      }
    }
  }

  /**
   * Blocks on the bell of the client we wait for, at most one poll interval.
   * True when that replaced the pause: the bell rang, or the interval ran
   * out. A bell got at once is not held (its client has not taken it, or
   * is gone): then the pause runs, so that nothing spins.
   */
  private async awaitBell(): Promise<boolean> {
    const bell = this.handlers.bell()
    const connection = this.connection
    if (bell === undefined || !connection) return false
    const started = performance.now()
    let got = false
    try {
      const [[row]] = (await connection.query({ sql: 'SELECT GET_LOCK(?, ?) AS got', timeout: this.commandTimeoutMs + POLL_MS }, [bell, POLL_MS / 1000])) as unknown as [
        { got: number | null }[],
      ]
      got = row?.got === 1
      if (got) await connection.query({ sql: 'DO RELEASE_LOCK(?)', timeout: this.commandTimeoutMs }, [bell])
    } catch {
      this.drop(connection)
      return false
    }
    // Got at once twice running: nobody holds that bell, so it would spin.
    this.unheld = got && performance.now() - started < 2 ? this.unheld + 1 : 0
    return this.unheld < 2
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

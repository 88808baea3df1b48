import mysql from 'mysql2'
import type { Connection, ConnectionOptions } from 'mysql2/promise'
import { endConnection } from './connection.js'

/** How long a ring waits to take the bell back (a waiter's session holds it for a moment after each ring). */
const RETAKE_S = 5

/**
 * A client's doorbell: a named lock (GET_LOCK) that the client holds on a
 * connection of its own and lets go of for a moment after each of its
 * transactions that left wake-ups ("ringing"). The pollers of clients that
 * wait for one of this client's holds block on the bell (GET_LOCK with the
 * poll interval as timeout) instead of sleeping, and so read their wake-up
 * rows right after the hand-over commits, not up to one poll interval later.
 *
 * The bell only ever says "look now": the wake-up rows are the message and
 * the poll the safety net, so a bell that is not held (not taken yet, its
 * connection lost and taken back, this client paused while someone holds
 * it) costs latency, never a wake-up. Named locks are per connection: that
 * is why none of them is ever the lock itself (docs/stores/mysql.md).
 */
export class Bell {
  private connection: Connection | undefined
  private held = false
  private ringing: Promise<void> = Promise.resolve()
  private pending = false
  private closed = false

  constructor(
    private readonly config: ConnectionOptions,
    readonly name: string,
  ) {}

  /** Takes the bell; failures are left to the next ring (the poll covers them). */
  async start(): Promise<void> {
    await this.take().catch(() => this.lose())
  }

  /** Lets waiters on this bell look now; rings that come while one runs are folded into one more. */
  ring(): void {
    if (this.closed || this.pending) return
    this.pending = true
    this.ringing = this.ringing.then(async () => {
      this.pending = false
      try {
        if (this.held) {
          await this.connection!.query('DO RELEASE_LOCK(?)', [this.name])
          this.held = false
        }
        await this.take()
      } catch {
        this.lose()
      }
    })
  }

  async close(): Promise<void> {
    this.closed = true
    const connection = this.connection
    this.connection = undefined
    await endConnection(connection)
  }

  private async take(): Promise<void> {
    if (this.closed) return
    if (!this.connection) {
      const connection = mysql.createConnection(this.config).promise()
      connection.on('error', () => this.lose())
      await connection.connect()
      if (this.closed) {
        connection.destroy()
        return
      }
      this.connection = connection
    }
    const [[row]] = (await this.connection.query('SELECT GET_LOCK(?, ?) AS got', [this.name, RETAKE_S])) as unknown as [{ got: number | null }[]]
    this.held = row?.got === 1
  }

  private lose(): void {
    this.held = false
    this.connection?.destroy()
    this.connection = undefined
  }
}

/**
 * The bell of a client, as every client names it (bell-of-holder.sql builds
 * the same from an owner): named locks are server-wide, and client ids are
 * random (48 bits), so no two clients share one.
 */
export function bellName(clientId: string): string {
  return `baton.bell.${clientId}`
}

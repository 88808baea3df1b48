import pg from 'pg'
import { quoteIdent } from './sql.js'

const RECONNECT_MIN_MS = 50
const RECONNECT_MAX_MS = 1000

/**
 * The one connection per client that LISTENs on the client's wake-up channel
 * (one connection for all its waiters and holders, outside the pool: a
 * pooled connection would be handed to queries and lose its LISTEN).
 *
 * When the connection drops it is opened again, with a growing pause, for as
 * long as the driver is open; after each reconnect `onReconnect` runs, since
 * wake-ups sent while it was down are lost.
 */
export class WakeListener {
  private client: pg.Client | undefined
  private closed = false
  private timer: NodeJS.Timeout | undefined
  /** Channels LISTENed to besides the wake-up channel (leader election observers), kept across reconnects. */
  private readonly extra = new Map<string, (payload: string) => void>()
  /**
   * The connection's statements, one at a time: pg deprecates a query sent
   * while others wait on the same client (pg 9 refuses it), and observers
   * coming and going send LISTEN / UNLISTEN whenever they like.
   */
  private statements: Promise<unknown> = Promise.resolve()

  constructor(
    private readonly config: pg.ClientConfig,
    private readonly channel: string,
    private readonly onMessage: (payload: string) => void,
    private readonly onReconnect: () => void,
  ) {}

  /** Connects and listens; throws if that fails (the caller reports it). */
  async start(): Promise<void> {
    await this.open()
  }

  async close(): Promise<void> {
    this.closed = true
    clearTimeout(this.timer)
    const client = this.client
    this.client = undefined
    await client?.end().catch(() => {})
  }

  private async open(): Promise<void> {
    const client = new pg.Client({ ...this.config, query_timeout: undefined })
    const lost = () => this.lost(client)
    client.on('error', lost)
    client.on('end', lost)
    client.on('notification', (message) => {
      if (message.payload === undefined) return
      const other = this.extra.get(message.channel)
      if (other) other(message.payload)
      else this.onMessage(message.payload)
    })
    try {
      await client.connect()
      for (const channel of [this.channel, ...this.extra.keys()]) await client.query(`LISTEN ${quoteIdent(channel)}`)
    } catch (error) {
      client.removeAllListeners('end')
      client.end().catch(() => {})
      throw error
    }
    if (this.closed) {
      await client.end().catch(() => {})
      return
    }
    this.client = client
  }

  /**
   * Also LISTENs on `channel` (now, and after every reconnect) until the
   * returned function is called. Resolves once listening, or at once if the
   * connection is down (the reconnect listens, then `onReconnect` runs).
   */
  async listen(channel: string, onMessage: (payload: string) => void): Promise<() => void> {
    this.extra.set(channel, onMessage)
    await this.statement(`LISTEN ${quoteIdent(channel)}`)
    return () => {
      if (this.extra.get(channel) !== onMessage) return
      this.extra.delete(channel)
      void this.statement(`UNLISTEN ${quoteIdent(channel)}`)
    }
  }

  /** Runs `text` on the current connection after the statements before it; a failure is the reconnect's business. */
  private statement(text: string): Promise<void> {
    const run = this.statements.then(async () => {
      await this.client?.query(text)
    }).catch(() => {})
    this.statements = run
    return run
  }

  private lost(client: pg.Client): void {
    if (this.client !== client) return
    this.client = undefined
    client.end().catch(() => {})
    this.reconnect(0)
  }

  private reconnect(attempt: number): void {
    if (this.closed) return
    const pause = Math.min(RECONNECT_MIN_MS * 2 ** attempt, RECONNECT_MAX_MS)
    this.timer = setTimeout(() => {
      this.open().then(
        () => {
          if (!this.closed) this.onReconnect()
        },
        () => this.reconnect(attempt + 1),
      )
    }, pause)
    this.timer.unref()
  }
}

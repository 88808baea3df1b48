import type { DriverFactory, DriverOptions } from '../../core/driver.js'
import type { StoreUrl } from '../../core/url.js'
import { isBatonError } from '../../core/errors.js'
import type { RedisDriver } from '../redis/index.js'
import { nodeChannel, parseServerInfo, RestartGuard, UNVERIFIED, type GuardState, type NodeEvent } from './restart-guard.js'

const RECONNECT_EVERY_MS = 500
const VERIFY_RETRY_MS = 200
/** The clock floor of the nodes' fencing counters: whole milliseconds, in µs. */
const TOKEN_CLOCK_UNIT_US = 1000

/**
 * One Redis master of a Redlock store: a single-node Redis driver (connected
 * by the Redis driver's own code), its restart guard, and a background
 * connect loop for a node that was down when the client started (ioredis
 * reconnects by itself once a first connection was made).
 */
export class RedlockNode {
  driver: RedisDriver | undefined
  /** Called when the node connects after start-up. */
  onConnected: ((driver: RedisDriver) => void) | undefined
  readonly guard: RestartGuard
  private lastError = 'not connected yet'
  /** The node refused this client's credentials at its last connection attempt. */
  refusedCredentials = false
  private timer: NodeJS.Timeout | undefined
  private closed = false
  private factory: DriverFactory | undefined

  constructor(readonly index: number, private readonly url: StoreUrl, private readonly options: DriverOptions, maxTtlMs: number) {
    this.guard = new RestartGuard(url.display, maxTtlMs)
  }

  /** host:port, never with credentials. */
  get display(): string {
    return this.url.display
  }

  /** Connected right now (a command sent now is not just queued). */
  get ready(): boolean {
    return this.driver !== undefined && this.driver.connection.status === 'ready'
  }

  /** Why nothing is sent to this node. */
  unreachable(): string {
    return `not connected (${this.lastError})`
  }

  guardState(largestTtlMs: number): GuardState {
    return this.driver ? this.guard.check(largestTtlMs) : UNVERIFIED
  }

  /** Connects once; on failure keeps trying in the background and returns why it failed. */
  async start(factory: DriverFactory): Promise<string | undefined> {
    this.factory = factory
    try {
      await this.wire((await factory(this.url, this.options)) as RedisDriver)
      return undefined
    } catch (error) {
      this.lastError = error instanceof Error ? error.message : String(error)
      this.refusedCredentials = isBatonError(error, 'UNAUTHORIZED')
      this.retryLater()
      return this.lastError
    }
  }

  private retryLater(): void {
    if (this.closed) return
    this.timer = setTimeout(() => {
      const options = { ...this.options, connectTimeoutMs: Math.min(this.options.connectTimeoutMs, 1000) }
      this.factory!(this.url, options).then(
        async (driver) => {
          if (this.closed) return void (await driver.close())
          await this.wire(driver as RedisDriver)
          this.onConnected?.(this.driver!)
          if (nodeChannel.hasSubscribers) {
            nodeChannel.publish({ store: 'redlock', node: this.display, state: 'counted', reason: 'connected' } satisfies NodeEvent)
          }
        },
        (error: unknown) => {
          this.lastError = error instanceof Error ? error.message : String(error)
          this.retryLater()
        },
      )
    }, RECONNECT_EVERY_MS)
    this.timer.unref()
  }

  /** Watches the connection: a drop suspends the node's votes until its run_id is checked again. */
  private async wire(driver: RedisDriver): Promise<void> {
    // Tokens floored by whole milliseconds: the nodes draw equal tokens in
    // the common case, so no raise is needed (see the comment atop index.ts).
    driver.tokenClockUnitUs = TOKEN_CLOCK_UNIT_US
    driver.batchScripts = false
    this.driver = driver
    const connection = driver.connection
    connection.on('close', () => {
      this.lastError = 'connection lost'
      this.guard.suspect('connection lost')
    })
    connection.on('ready', () => void this.verify())
    await this.verify()
  }

  private async verify(): Promise<void> {
    const driver = this.driver
    if (!driver || this.closed) return
    try {
      const { runId, uptimeMs } = parseServerInfo(await driver.connection.info('server'))
      this.guard.learn(runId, uptimeMs)
    } catch (error) {
      this.lastError = error instanceof Error ? error.message : String(error)
      if (this.closed) return
      // Still unverified: try again soon (also covers INFO failing on a live connection).
      setTimeout(() => void this.verify(), VERIFY_RETRY_MS).unref()
    }
  }

  async close(): Promise<void> {
    this.closed = true
    clearTimeout(this.timer)
    await this.driver?.close()
  }
}

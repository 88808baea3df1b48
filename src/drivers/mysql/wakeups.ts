import type { DriverOptions, Wake } from '../../core/driver.js'
import { WakeRoutes } from '../../core/wake-routes.js'
import { Observers } from '../../core/observers.js'
import { Bell, bellName } from './bell.js'
import type { MysqlTarget } from './connection.js'
import { WakePoller } from './listener.js'
import type { SqlSet } from './sql.js'

/**
 * How this client is told: its owners' wake-up rows and its observed names'
 * change counters, read by the poller (listener.ts) while anything waits,
 * holds or observes, and its doorbell (bell.ts), rung after each of its
 * transactions that left wake-ups for others.
 */
export class Wakeups {
  private readonly routes = new WakeRoutes()
  private readonly poller: WakePoller
  /** This client's doorbell, rung after each of its transactions that left wake-ups. */
  private readonly bell: Bell
  /** Names our owners wait for (their last attempt was busy), by owner: the poller waits on a holder's bell. */
  private readonly waitingOn = new Map<string, string>()
  /** Owners watched now: the poller runs while there are any (or observers). */
  private watching = 0
  private readonly observers = new Observers()

  constructor(target: MysqlTarget, sql: SqlSet, options: DriverOptions) {
    this.poller = new WakePoller(target.connection, options.clientId, sql, options.commandTimeoutMs, {
      onMessage: (message) => this.routes.dispatch(message),
      onChange: (name) => this.observers.notify(name),
      // Wake-ups that arrived while the connection was down were kept (they are rows); look again anyway.
      onReconnect: () => {
        this.routes.nudgeAll()
        this.observers.notifyAll()
      },
      wanted: () => this.watching > 0 || this.observers.size > 0,
      observed: () => this.observers.names(),
      waitedNames: () => [...new Set(this.waitingOn.values())],
    })
    this.bell = new Bell(target.connection, bellName(options.clientId))
  }

  start(): Promise<void> {
    return this.bell.start()
  }

  /** Lets the pollers of clients waiting on this one's holds look now. */
  ring(): void {
    this.bell.ring()
  }

  /** The owner waits in line for `name` (the poller waits on the bell of its holder), or no longer waits (undefined). */
  waitsFor(owner: string, name: string | undefined): void {
    if (name === undefined) this.waitingOn.delete(owner)
    else this.waitingOn.set(owner, name)
  }

  watch(owner: string, onWake: (wake: Wake) => void): () => void {
    const unwatch = this.routes.watch(owner, onWake)
    this.watching++
    this.poller.kick()
    let done = false
    return () => {
      if (done) return
      done = true
      this.watching--
      this.waitingOn.delete(owner)
      unwatch()
    }
  }

  /**
   * Election observers: the poller reads the change counter of every
   * observed name (bumped by each grant, release, hand-over, proclaim and
   * forced release) and tells the name's observers when it moved; its first
   * read, and a reconnect, tell them once in any case.
   */
  observe(name: string, onChange: () => void): () => void {
    const remove = this.observers.add(name, onChange, () => this.poller.forget(name))
    this.poller.kick(true)
    return remove
  }

  async close(): Promise<void> {
    this.routes.clear()
    this.observers.clear()
    await Promise.allSettled([this.poller.close(), this.bell.close()])
  }
}

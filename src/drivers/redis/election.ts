import type { HoldRef } from '../../core/driver.js'
import { Observers } from '../../core/observers.js'
import type { RedisClient, RedisTarget } from './connection.js'
import { baseKey } from './keys.js'
import { memberOf } from './members.js'
import type { NameScripts } from './name-scripts.js'
import type { WakeChannels } from './wake-channels.js'

/**
 * Leader election's part of the Redis driver: proclaim, and observers of a
 * name (their notice channels, and the "observed" marks that keep a
 * name's plain holds publishing). Separate from wake-ups: these reach
 * anyone who looks, not just the owners that wait or hold.
 */

/**
 * How long a name stays marked observed without its observers' renewal
 * (every third of it). A client gone without unobserving leaves its names
 * on the slow paths that long at most.
 */
const OBSERVED_MARK_MS = 60_000

/** Marks an election observers' channel apart from the clients' wake-up channels (client ids have no "="). */
export const NOTICE_MARK = '='

export class Election {
  /** Election observers by notice channel; one subscription per channel in use. */
  private readonly observers = new Observers()

  /** The names observed here, each renewing its "observed" mark in the store (observe.lua) until its last observer leaves. */
  private readonly marks = new Map<string, NodeJS.Timeout>()

  constructor(
    private readonly scripts: NameScripts,
    private readonly channels: WakeChannels,
    private readonly subscriber: RedisClient,
    private readonly target: RedisTarget,
  ) {}

  async proclaim(hold: HoldRef, value: string): Promise<boolean> {
    return Number(await this.scripts.call('proclaim', hold.name, [memberOf(hold), value, this.channels.channelFor(hold.name)])) === 1
  }

  /**
   * The scripts publish on "<wake-up channel prefix>=<base key>" when a
   * hold carrying a value (a leader's) is granted, handed over, released,
   * proclaimed or forced, and so for any exclusive hold while the name is
   * marked observed (scripts/basics.lua): a plain mutex's holder is a
   * leader to observe() too. Expiry is passive in Redis (no script runs),
   * so the core also reads again at the leader's lease end.
   */
  observe(name: string, onChange: () => void): () => void {
    const channel = `${this.channels.channelFor(name)}${NOTICE_MARK}${baseKey(this.target.keyPrefix, name)}`
    return this.observers.add(channel, onChange, () => {
      const mark = () => this.scripts.call('observe', name, [OBSERVED_MARK_MS])
      this.marks.set(channel, setInterval(() => mark().catch(() => {}), OBSERVED_MARK_MS / 3).unref())
      // Once subscribed and marked, a look: a change between the caller's first read and then is not missed.
      const subscribed = this.channels.sharded ? this.subscriber.ssubscribe(channel) : this.subscriber.subscribe(channel)
      Promise.allSettled([subscribed, mark()]).then(() => this.notices(channel))
    }, () => {
      clearInterval(this.marks.get(channel))
      this.marks.delete(channel)
      const dropped = this.channels.sharded ? this.subscriber.sunsubscribe(channel) : this.subscriber.unsubscribe(channel)
      dropped.catch(() => {})
    })
  }

  /** The observer channels to subscribe again after a reconnect. */
  observedChannels(): string[] {
    return this.observers.names()
  }

  /** A notice on `channel`: its observers look again. */
  notices(channel: string): void {
    this.observers.notify(channel)
  }

  /** Every observer looks again (notices may have been missed). */
  nudgeAll(): void {
    this.observers.notifyAll()
  }

  close(): void {
    this.observers.clear()
    for (const timer of this.marks.values()) clearInterval(timer)
    this.marks.clear()
  }
}

import type { Wake } from '../../core/driver.js'
import { WakeRoutes } from '../../core/wake-routes.js'
import type { RedisClient, RedisTarget } from './connection.js'
import { shardedWakeChannelPrefix, slotOfName, wakeChannelPrefix } from './keys.js'

/**
 * Wake-ups by pub/sub: where the scripts publish a name's wake-ups (one
 * channel per client, or per client and slot on a sharded Cluster), the
 * sharded subscriptions made before a slot's first attempt, and the routes
 * to the owners watched here. Separate from the holds, which only need the
 * channel to name and the subscription to be ready.
 */
export class WakeChannels {
  private readonly routes = new WakeRoutes()
  private readonly prefix: string
  /** Sharded mode: the subscription of each slot used: true once active, or while it is made. */
  private readonly slots = new Map<number, true | Promise<void>>()

  constructor(
    private readonly subscriber: RedisClient,
    private readonly target: RedisTarget,
    private readonly clientId: string,
    /** Redis Cluster >= 7: wake-ups by SPUBLISH on per-slot channels (see keys.ts). */
    readonly sharded: boolean,
  ) {
    this.prefix = wakeChannelPrefix(target.keyPrefix)
  }

  /** This client's wake-up channel (not sharded). */
  get wakeChannel(): string {
    return this.prefix + this.clientId
  }

  /** Where scripts publish wake-ups for `name`'s waiters and holders. */
  channelFor(name: string): string {
    return this.sharded ? shardedWakeChannelPrefix(this.target.keyPrefix, slotOfName(name)) : this.prefix
  }

  /**
   * Sharded mode: subscribes to this client's channel for the slot of `name`
   * once, before the first attempt on that slot is sent, so no wake-up
   * published for that attempt can come before the subscription. A failed
   * subscription is tried again by the next attempt; the retry timers cover
   * the attempts in between. True at once when not sharded.
   */
  ready(name: string): true | Promise<void> {
    if (!this.sharded) return true
    const slot = slotOfName(name)
    const known = this.slots.get(slot)
    if (known) return known
    const subscribing = this.subscriber.ssubscribe(shardedWakeChannelPrefix(this.target.keyPrefix, slot) + this.clientId).then(
      () => {
        this.slots.set(slot, true)
      },
      () => {
        this.slots.delete(slot)
      },
    )
    this.slots.set(slot, subscribing)
    return subscribing
  }

  watch(owner: string, onWake: (wake: Wake) => void): () => void {
    return this.routes.watch(owner, onWake)
  }

  /** See WakeRoutes.everyOwner. */
  everyOwner(route: (owner: string, wake: Wake) => void, nudge: () => void): void {
    this.routes.everyOwner(route, nudge)
  }

  /** A wake-up message for this client's owners. */
  dispatch(message: string): void {
    this.routes.dispatch(message)
  }

  /** Tells every watched owner to try again now (wake-ups may have been missed). */
  nudgeAll(): void {
    this.routes.nudgeAll()
  }

  clear(): void {
    this.routes.clear()
  }
}

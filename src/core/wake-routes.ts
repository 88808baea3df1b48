import type { Wake } from './driver.js'

/** The wake-up of a hold released through another client than its owner's (Driver.release). */
export const RELEASED_ELSEWHERE: Wake = {
  type: 'lost', reason: 'released through another client (with its owner and token)', cause: 'released',
}

/**
 * Wake-ups that a store sends as text on one channel per client, routed to
 * the owner they are for. Messages: "g|<owner>|<token>|<ttl ms>" (the lock
 * was handed over), "l|<owner>|<reason>" (the hold is lost: released by
 * force), "d|<owner>" (the hold was released through another client, see
 * Driver.release), "r|<owner>[|<owner>…]" (something changed: try again).
 * Owners never contain '|'.
 */
export class WakeRoutes {
  private readonly routes = new Map<string, (wake: Wake) => void>()
  /**
   * Wake-ups of owners with no route of their own, and every nudge: a driver
   * built of several stores (Redlock) routes its owners itself, once per
   * store, instead of one route per owner and store (see everyOwner).
   */
  private fallback: ((owner: string, wake: Wake) => void) | undefined
  private onNudge: (() => void) | undefined

  /** Routes wake-ups of owners not watched here to `route`, and nudgeAll() to `nudge`. */
  everyOwner(route: (owner: string, wake: Wake) => void, nudge: () => void): void {
    this.fallback = route
    this.onNudge = nudge
  }

  /** Driver.watch: routes `owner`'s wake-ups to `onWake` until the returned function is called. */
  watch(owner: string, onWake: (wake: Wake) => void): () => void {
    this.routes.set(owner, onWake)
    return () => {
      if (this.routes.get(owner) === onWake) this.routes.delete(owner)
    }
  }

  dispatch(message: string): void {
    const [type, owner, ...rest] = message.split('|')
    if (type === 'r') {
      for (const each of [owner, ...rest]) if (each !== undefined) this.routeOf(each)?.({ type: 'retry' })
      return
    }
    const route = owner === undefined ? undefined : this.routeOf(owner)
    if (!route) return
    if (type === 'g') route({ type: 'granted', token: BigInt(rest[0]!), ttlMs: Number(rest[1]) })
    else if (type === 'l') route({ type: 'lost', reason: rest.join('|'), cause: 'forced' })
    else if (type === 'd') route(RELEASED_ELSEWHERE)
  }

  /** Tells every owner to try again (wake-ups may have been lost, e.g. while a connection was down). */
  nudgeAll(): void {
    for (const route of [...this.routes.values()]) route({ type: 'retry' })
    this.onNudge?.()
  }

  private routeOf(owner: string): ((wake: Wake) => void) | undefined {
    const route = this.routes.get(owner)
    if (route || !this.fallback) return route
    const fallback = this.fallback
    return (wake) => fallback(owner, wake)
  }

  clear(): void {
    this.routes.clear()
  }
}

import type { Wake } from '../../core/driver.js'
import type { RedisDriver } from '../redis/index.js'
import type { Holds } from './holds.js'
import type { NodeSet } from './node-set.js'
import type { Waiting } from './waiting.js'

/**
 * Wake-up routes of watched owners: each node's notices for an owner,
 * merged into one route and judged (a holder's "retry" is only a node's
 * resubscribe; a "lost" ends the hold). Separate because it is the only
 * part fed by the nodes unasked, including nodes that connect later.
 */

/** One watched owner: its wake-ups from every node, and how to stop them. */
interface Route {
  readonly name: string
  readonly onWake: (wake: Wake) => void
  readonly fromNode: (wake: Wake) => void
  readonly unwatch: (() => void)[]
}

export class Wakeups {
  private readonly routes = new Map<string, Route>()

  constructor(private readonly nodes: NodeSet, private readonly holds: Holds, private readonly waiting: Waiting) {}

  watch(name: string, owner: string, onWake: (wake: Wake) => void): () => void {
    const fromNode = (wake: Wake): void => this.deliver(owner, wake)
    const route: Route = { name, onWake, fromNode, unwatch: [] }
    this.routes.set(owner, route)
    for (const node of this.nodes.all) if (node.driver) route.unwatch.push(node.driver.watch(name, owner, fromNode))
    return () => {
      if (this.routes.get(owner) !== route) return
      this.routes.delete(owner)
      // Also what adopt() registered on nodes that connected later.
      for (const unwatch of route.unwatch) unwatch()
    }
  }

  /** Wake-ups from the nodes: "retry" from the line node, "lost" from each node a forced release dropped. */
  private deliver(owner: string, wake: Wake): void {
    const route = this.routes.get(owner)
    if (!route) return
    if (wake.type === 'retry') {
      // A holder's "retry" is a node's resubscribe: that node's lost notice
      // may be gone, but the other nodes' notices are not, and a quorum
      // re-read now could declare a live hold lost only because a node is
      // down; its renewals decide.
      if (this.holds.has(owner)) return
      this.waiting.markWoken(owner)
      route.onWake(wake)
    } else if (wake.type === 'lost') {
      if (this.holds.drop(owner)) route.onWake(wake)
    }
    // 'granted' never comes: nobody is in a node's own line.
  }

  /** A node that connected after start-up: route the current owners' wake-ups through it too. */
  adopt(driver: RedisDriver): void {
    for (const [owner, route] of this.routes) route.unwatch.push(driver.watch(route.name, owner, route.fromNode))
  }

  clear(): void {
    this.routes.clear()
  }
}

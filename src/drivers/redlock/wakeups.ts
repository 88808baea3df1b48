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

/** One watched owner. */
interface Route {
  readonly name: string
  readonly onWake: (wake: Wake) => void
}

export class Wakeups {
  private readonly routes = new Map<string, Route>()

  constructor(nodes: NodeSet, private readonly holds: Holds, private readonly waiting: Waiting) {
    for (const node of nodes.all) if (node.driver) this.adopt(node.driver)
  }

  /**
   * One route per owner, here: each node hands this driver the wake-ups of
   * every owner (adopt), so a watch costs one map entry whatever the number
   * of nodes (it was one route per node, made and dropped every attempt).
   */
  watch(name: string, owner: string, onWake: (wake: Wake) => void): () => void {
    const route: Route = { name, onWake }
    this.routes.set(owner, route)
    return () => {
      if (this.routes.get(owner) === route) this.routes.delete(owner)
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

  /**
   * A node's wake-ups come here, for every owner (also a node that connected
   * after start-up); its resubscribe nudges every owner, as a "retry" from it.
   */
  adopt(driver: RedisDriver): void {
    driver.watchEveryOwner((owner, wake) => this.deliver(owner, wake), () => {
      for (const owner of [...this.routes.keys()]) this.deliver(owner, { type: 'retry' })
    })
  }

  clear(): void {
    this.routes.clear()
  }
}

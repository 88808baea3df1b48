import type { Cluster, Redis } from 'ioredis'
import { listedKey, listedKeyParts, slotTags } from './keys.js'
import { nodeScript } from './scripts.js'

/** A read of the index of names in use: ZRANGEBYLEX's min and max, and how many names at most (undefined: all). */
export interface IndexRange {
  readonly min: string
  readonly max: string | Buffer
  readonly count: number | undefined
}

/**
 * Nodes that refused list-slots.lua for good (Redis < 7 does not compile
 * its shebang, or does not know its flags): their slots are read one by one
 * from then on, without asking again at every page.
 */
const refusing = new WeakSet<Redis>()

/** How many times a slot's read through the cluster client is tried while the slot moves (50, 100, … ms apart). */
const FOLLOW_ATTEMPTS = 5

/** A refusal that asking again will not change, unlike a slot that moved ("non local key") or a node down. */
function refusesForGood(error: unknown): boolean {
  return error instanceof Error && /compil|shebang|flag/i.test(error.message)
}

/**
 * The index of names in use on a Redis Cluster: one sorted set per slot
 * (keys.ts listedKey), each in its slot, so reading a page means reading
 * the first names of all 16,384 of them. Each master is sent ONE
 * list-slots.lua call for the slots it serves by the client's map of
 * slots, which reads their indexes there and answers only the first
 * `count` names in byte order: a page costs a call per master, not a
 * command per slot (16,384 ZRANGEBYLEX, pipelined per master, took 1–3 s a
 * page under load, whatever the page's size). A script, not a pipeline of
 * fewer commands: a slot's index can only be read by a command on its own
 * key, and only a script can read thousands of them and merge them where
 * they are, sending back a page rather than every slot's page.
 *
 * The pipelined read stays as the fallback, per master: a master that
 * refuses the script (Redis < 7; an error because one of its slots moved
 * or is moving, "non local key"), and a slot whose master the client has no
 * connection to yet, are read slot by slot, each slot's read following
 * moves through the cluster client. So a page stays exact during a reshard:
 * a slot is read either whole by the script on the master that has it, or
 * by the pipeline, which follows it.
 */
export class ClusterIndex {
  constructor(private readonly cluster: Cluster, private readonly keyPrefix: string) {}

  /** Every name `range` reads in every slot's index, handed to `add` (a superset of the first `count`: the caller sorts and cuts). */
  async read(range: IndexRange, add: (found: unknown) => void): Promise<void> {
    const masters = new Map(this.cluster.nodes('master').map((node) => [`${node.options.host}:${node.options.port}`, node]))
    const bySlotsNode = new Map<string, number[]>()
    const elsewhere: number[] = []
    for (let slot = 0; slot < 16384; slot++) {
      const nodeKey = this.cluster.slots[slot]?.[0]
      if (nodeKey === undefined || !masters.has(nodeKey)) elsewhere.push(slot)
      else if (bySlotsNode.has(nodeKey)) bySlotsNode.get(nodeKey)!.push(slot)
      else bySlotsNode.set(nodeKey, [slot])
    }
    await Promise.all([
      ...[...bySlotsNode].map(([nodeKey, slots]) => this.fromMaster(masters.get(nodeKey)!, slots, range, add)),
      ...elsewhere.map((slot) => this.followed(slot, range, add)),
    ])
  }

  private async fromMaster(node: Redis, slots: readonly number[], range: IndexRange, add: (found: unknown) => void): Promise<void> {
    if (!refusing.has(node)) {
      try {
        add(await this.script(node, slots, range))
        return
      } catch (error) {
        if (refusesForGood(error)) refusing.add(node)
      }
    }
    await this.pipelined(node, slots, range, add)
  }

  /** list-slots.lua on `node` for `slots`: EVALSHA, EVAL when the node does not have it yet. */
  private async script(node: Redis, slots: readonly number[], range: IndexRange): Promise<unknown> {
    const { sha, lua } = nodeScript('listSlots')
    const { head, tail } = listedKeyParts(this.keyPrefix)
    const argv = [range.min, range.max, range.count ?? 0, head, tail, ...slotTags(slots)]
    try {
      return await node.evalsha(sha, 0, ...argv)
    } catch (error) {
      if (!(error instanceof Error && error.message.startsWith('NOSCRIPT'))) throw error
      return node.eval(lua, 0, ...argv)
    }
  }

  /** One ZRANGEBYLEX per slot, pipelined to `node`; a slot it answers with an error (moved, moving) is read again through the cluster client. */
  private async pipelined(node: Redis, slots: readonly number[], range: IndexRange, add: (found: unknown) => void): Promise<void> {
    const pipeline = node.pipeline()
    for (const slot of slots) pipeline.zrangebylex(listedKey(this.keyPrefix, slot), ...rangeArgs(range))
    const replies = (await pipeline.exec()) ?? []
    await Promise.all(slots.map((slot, i) => {
      const [error, found] = replies[i] ?? [new Error('no reply'), null]
      return error ? this.followed(slot, range, add) : add(found)
    }))
  }

  /**
   * One slot's index read through the cluster client, which follows the slot
   * where it is. While a slot moves, the client can still fail the read: a
   * redirection it gave up on, or (auto-pipelined with other slots' reads) a
   * batch whose slots the map now puts on different masters ("same slots
   * allocation group"). A read changes nothing: it is asked again, a few
   * times, before the page fails with BACKEND_UNAVAILABLE.
   */
  private async followed(slot: number, range: IndexRange, add: (found: unknown) => void): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        add(await this.cluster.zrangebylex(listedKey(this.keyPrefix, slot), ...rangeArgs(range)))
        return
      } catch (error) {
        if (attempt >= FOLLOW_ATTEMPTS) throw error
        await new Promise((resolve) => setTimeout(resolve, 50 * attempt))
      }
    }
  }
}

/** ZRANGEBYLEX's arguments after the key for `range`. */
export function rangeArgs(range: IndexRange): [string, string] {
  const args = range.count === undefined ? [range.min, range.max] : [range.min, range.max, 'LIMIT', 0, range.count]
  return args as unknown as [string, string]
}

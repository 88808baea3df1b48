import type { Etcd3 } from 'etcd3'
import type { HolderSummary, ListPage, LockInfo } from '../../core/driver.js'
import { compareNames, inspectInOrder, limitOf, namesOfPage } from '../../core/list.js'
import { holdersIn, summaryOf, waiterSummaryOf, waitersIn } from '../sequenced/line.js'
import type { Slots } from '../sequenced/slots.js'
import { guarded, type EtcdTarget } from './connection.js'
import { prefixEnd, type Lines } from './keys.js'
import { delayMarkerKey, delayOfMarker, isPhantom, type LeaseLife } from './lease.js'
import { ttlLeft, type EtcdSlot } from './slot.js'

/** inspect() and list(): a name's line with its holders' leases, and pages of names from one key range. */
export class EtcdInspector {
  constructor(
    private readonly client: Etcd3,
    private readonly target: EtcdTarget,
    private readonly lines: Lines,
    private readonly slots: Slots<EtcdSlot>,
  ) {}

  async inspect(name: string): Promise<LockInfo | null> {
    const read = await this.lines.read(name)
    if (read.line.length === 0) return null
    const blocking = holdersIn(read.line)
    const leaseIds = [...new Set(blocking.map((h) => read.leases.get(h.id)!))]
    const lives = new Map<string, LeaseLife>()
    await guarded(this.target, Promise.all(leaseIds.map(async (id) => {
      const [reply, marker] = await Promise.all([
        this.client.leaseClient.leaseTimeToLive({ ID: id }),
        this.client.kv.range({ key: Buffer.from(delayMarkerKey(this.target, id)) }),
      ])
      lives.set(id, { granted: Number(reply.grantedTTL), left: Math.max(0, Number(reply.TTL)), delay: delayOfMarker(marker.kvs[0]?.value.toString()) })
    })))
    const wall = Date.now()
    // A lock-delay phantom blocks the name but holds nothing: no holder, as on every store (leader() is null).
    const holders = blocking.filter((entry) => this.slots.get(entry.owner)?.held || !isPhantom(lives.get(read.leases.get(entry.id)!)))
    const summaries: HolderSummary[] = holders.map((entry) => {
      const mine = this.slots.get(entry.owner)
      const life = lives.get(read.leases.get(entry.id)!)
      // etcd answers whole seconds: a lease with TTL t ends in under t + 1 s.
      // Another client's hold is shown ending at the latest that can be, so
      // no one reads it as gone while the store may still keep it.
      const left = mine?.held ? ttlLeft(mine) : Math.max(0, (life?.left ?? 0) + (life?.left ? 1 : 0) - (life?.delay ?? 0)) * 1000
      return summaryOf(entry, wall + left)
    })
    const granted = [...new Set(holders.map((h) => lives.get(read.leases.get(h.id)!)?.granted ?? 0))].filter((s) => s > 0)
    const first = read.line[0]!
    return {
      name, kind: first.kind, fair: true, permits: first.permits, holders: summaries,
      waiters: waitersIn(read.line).map(waiterSummaryOf),
      lastToken: blocking.reduce((max, h) => (h.token > max ? h.token : max), 0n),
      note: `etcd lease of the holders: ${granted.map((s) => `${s} s`).join(', ') || 'unknown'} ` +
        '(asked: the ttl in whole seconds; etcd raises leases to its floor, 1.5 × its election timeout, 2 s by default): a live client ends each hold at its ttl; ' +
        'a crashed or cut-off client\'s holds end when that lease runs out',
    }
  }

  /**
   * One keys-only range read from the cursor on (a name after `after` has
   * its keys at or after `<keyPrefix><after>`), then only the page's names
   * inspected. Keys are `<name>/<id>`, so key order is not quite name order
   * (a name with a byte below "/" sorts its keys first): the range is not
   * cut at the page's size, and the names are sorted here.
   */
  async *list(prefix: string, page?: ListPage): AsyncIterable<LockInfo> {
    const base = this.target.keyPrefix + prefix
    const after = page?.after
    const start = after !== undefined && compareNames(after, prefix) > 0 ? this.target.keyPrefix + after : base
    const reply = await guarded(this.target, this.client.kv.range({ key: Buffer.from(start), range_end: prefixEnd(base), keys_only: true }))
    const names = new Set<string>()
    for (const kv of reply.kvs) {
      const rest = kv.key.toString().slice(this.target.keyPrefix.length)
      const slash = rest.lastIndexOf('/')
      if (slash > 0 && /^[0-9a-f]+(\.[\w-]+)?$/.test(rest.slice(slash + 1))) names.add(rest.slice(0, slash))
    }
    yield* inspectInOrder(namesOfPage(names, prefix, page), limitOf(page), (name) => this.inspect(name))
  }
}

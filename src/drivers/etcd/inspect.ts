import type { Etcd3 } from 'etcd3'
import type { HolderSummary, ListPage, LockInfo } from '../../core/driver.js'
import { holdersIn, summaryOf, waiterSummaryOf, waitersIn } from '../sequenced/line.js'
import type { Slots } from '../sequenced/slots.js'
import { guarded, type EtcdTarget } from './connection.js'
import type { LineRead, Lines } from './keys.js'
import { delayMarkerKey, delayOfMarker, isPhantom, type LeaseLife } from './lease.js'
import { EtcdPages } from './pages.js'
import { ttlLeft, type EtcdSlot } from './slot.js'

/** inspect() and list(): a name's line with its holders' leases, and pages of lines (EtcdPages). */
export class EtcdInspector {
  private readonly pages: EtcdPages

  constructor(
    private readonly client: Etcd3,
    private readonly target: EtcdTarget,
    private readonly lines: Lines,
    private readonly slots: Slots<EtcdSlot>,
  ) {
    this.pages = new EtcdPages(client, target)
  }

  async inspect(name: string): Promise<LockInfo | null> {
    const read = await this.lines.read(name)
    return this.describe(name, read, await this.livesOf([read]))
  }

  /** The lease of every holder in `reads`, each lease asked once however many names it holds. */
  private async livesOf(reads: readonly LineRead[]): Promise<Map<string, LeaseLife>> {
    const leaseIds = new Set(reads.flatMap((read) => holdersIn(read.line).map((h) => read.leases.get(h.id)!)))
    const lives = new Map<string, LeaseLife>()
    await guarded(this.target, Promise.all([...leaseIds].map(async (id) => {
      const [reply, marker] = await Promise.all([
        this.client.leaseClient.leaseTimeToLive({ ID: id }),
        this.client.kv.range({ key: Buffer.from(delayMarkerKey(this.target, id)) }),
      ])
      lives.set(id, { granted: Number(reply.grantedTTL), left: Math.max(0, Number(reply.TTL)), delay: delayOfMarker(marker.kvs[0]?.value.toString()) })
    })))
    return lives
  }

  private describe(name: string, read: LineRead, lives: ReadonlyMap<string, LeaseLife>): LockInfo | null {
    if (read.line.length === 0) return null
    const blocking = holdersIn(read.line)
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
   * A page's lines (EtcdPages: about a page's worth of keys, in a few
   * requests), then each lease of the page's holders asked once: a few
   * requests for a page or for every name, not some per name.
   */
  async *list(prefix: string, page?: ListPage): AsyncIterable<LockInfo> {
    const { names, keysOf, revision } = await this.pages.read(prefix, page)
    // Lines.parse wants a name's keys in create order, as Lines.range reads them.
    const reads = names.map((name) => this.lines.parse(name, keysOf.get(name)!.sort((a, b) => Number(BigInt(a.create_revision) - BigInt(b.create_revision))), revision))
    const lives = await this.livesOf(reads)
    for (const [i, name] of names.entries()) {
      const info = this.describe(name, reads[i]!, lives)
      if (info) yield info
    }
  }
}

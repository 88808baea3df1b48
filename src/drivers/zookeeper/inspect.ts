import type { Stat } from 'node-zookeeper-client'
import type { HolderSummary, ListPage, LockInfo } from '../../core/driver.js'
import { inspectInOrder, limitOf, namesOfPage } from '../../core/list.js'
import { decodeNote, holdersIn, summaryOf, waiterSummaryOf, waitersIn } from '../sequenced/line.js'
import type { Slots } from '../sequenced/slots.js'
import { nameOf, parentOf, ROOT, tokenOf, type ZkLines } from './paths.js'
import { errorCode, Exception, type ZkTarget } from './session.js'
import { guarded, removeNode, type ZkSessions } from './sessions.js'
import type { ZkSlot } from './slot.js'

/** inspect(), list() and forceRelease(): a name's line read on the admin session; names are the root's children. */
export class ZkInspector {
  constructor(
    private readonly target: ZkTarget,
    private readonly sessions: ZkSessions,
    private readonly lines: ZkLines,
    private readonly slots: Slots<ZkSlot>,
    /** ZkHolds.ttlLeft: what this client's own hold has left. */
    private readonly ttlLeft: (slot: ZkSlot) => number,
  ) {}

  async inspect(name: string): Promise<LockInfo | null> {
    const session = await this.sessions.admin()
    const parent = parentOf(name)
    const { children, stat: parentStat } = await guarded(this.target, session.childrenWithStat(parent)
      .catch((e: unknown) => (errorCode(e) === Exception.NO_NODE ? { children: [] as string[], stat: undefined } : Promise.reject(e))))
    const nodes = new Map<string, { data: Buffer; stat: Stat }>()
    await guarded(this.target, Promise.all(children.map(async (child) => {
      const node = await session.getData(`${parent}/${child}`)
      if (node) nodes.set(`${parent}/${child}`, node)
    })))
    for (const [path, { stat }] of nodes) if (stat.version > 0) this.lines.downgraded.add(path)
    const line = this.lines.parse(parent, children.filter((c) => nodes.has(`${parent}/${c}`)))
      .map((e) => {
        const { data, stat } = nodes.get(e.id)!
        return { ...e, ...decodeNote(data.toString()), since: Number(stat.ctime.readBigInt64BE(0)), token: tokenOf(parentStat!, e.id.slice(parent.length + 1)) }
      })
    if (line.length === 0) return null
    const blocking = holdersIn(line)
    // A lock-delay phantom blocks the name but holds nothing: no holder, as on every store (leader() is null).
    const live = await guarded(this.target, Promise.all(blocking.map(async (entry) => {
      if (this.slots.get(entry.owner)?.held) return true
      const alive = decodeNote(nodes.get(entry.id)!.data.toString()).alive
      return alive === undefined || (await session.exists(alive)) !== null
    })))
    const holders = blocking.filter((_, i) => live[i])
    const wall = Date.now()
    const summaries: HolderSummary[] = holders.map((entry) => {
      const mine = this.slots.get(entry.owner)
      // Another client's hold ends at its ttl, or at the latest one session timeout after that client went silent.
      return summaryOf(entry, wall + (mine?.held ? this.ttlLeft(mine) : session.timeoutMs))
    })
    const first = line[0]!
    return {
      name, kind: first.kind, fair: true, permits: first.permits, holders: summaries,
      waiters: waitersIn(line).map(waiterSummaryOf),
      lastToken: blocking.reduce((max, h) => (h.token > max ? h.token : max), 0n),
      note: `ZooKeeper sessions of this client (asked → granted): ${await this.sessions.note()}; ` +
        'the ensemble clamps sessions to 2-20 × tickTime. A live client ends each hold at its ttl; ' +
        'a crashed or cut-off client\'s holds end when its session expires',
    }
  }

  /** The names are the root's children (one read, no range in ZooKeeper): sorted here, then only the page's inspected. */
  async *list(prefix: string, page?: ListPage): AsyncIterable<LockInfo> {
    const session = await this.sessions.admin()
    const parents = await guarded(this.target, session.children(ROOT))
    const names = parents.map(nameOf).filter((n): n is string => n !== undefined)
    yield* inspectInOrder(namesOfPage(names, prefix, page), limitOf(page), (name) => this.inspect(name))
  }

  async forceRelease(name: string): Promise<boolean> {
    const session = await this.sessions.admin()
    const parent = parentOf(name)
    const children = await guarded(this.target, session.children(parent).catch((e: unknown) => (errorCode(e) === Exception.NO_NODE ? [] : Promise.reject(e))))
    const line = this.lines.parse(parent, children)
    // Holders' clients see their node deleted (`lost`), waiters' clients theirs (`retry`).
    await Promise.all(line.map((e) => removeNode(this.target, session, e.id)))
    return line.length > 0
  }
}

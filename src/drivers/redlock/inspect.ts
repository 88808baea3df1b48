import type { HolderSummary, ListPage, LockInfo, NodeView } from '../../core/driver.js'
import { inspectInOrder, limitOf, namesOfPage } from '../../core/list.js'
import { BatonError } from '../../core/errors.js'
import type { NodeCall } from './quorum.js'
import type { Holds } from './holds.js'
import type { Line } from './line.js'
import type { NodeSet } from './node-set.js'

/**
 * What the operator sees of a Redlock name: the quorum's view (holders a
 * majority has, the counter a majority reached) beside each node's own view
 * and whether its votes count, and the paged list. Read-only, so separate
 * from everything that changes the nodes.
 */
export class Inspector {
  constructor(private readonly nodes: NodeSet, private readonly line: Line, private readonly holds: Holds) {}

  async inspect(name: string): Promise<(LockInfo & { readonly nodes: readonly NodeView[] }) | null> {
    const majority = this.nodes.majority
    const counted = this.nodes.counting()
    const calls = this.nodes.all.map((node): NodeCall<LockInfo | null> => (node.driver ? () => node.driver!.inspect(name) : node.unreachable()))
    const lineNode = this.nodes.lineNode()
    const [answers, waiters] = await Promise.all([
      this.nodes.gatherRead(calls),
      lineNode ? this.line.list(lineNode.driver!, name).catch(() => []) : Promise.resolve([]),
    ])
    const views: NodeView[] = answers.map((a, i) => {
      const node = this.nodes.all[i]!
      const guard = this.nodes.guardState(node)
      if (a.kind !== 'answered') return { node: node.display, state: 'down', reason: this.nodes.describeReadFailure(a) }
      const base = { node: node.display, state: guard.state, ...(guard.state === 'excluded' ? { reason: guard.reason } : {}) }
      return a.value ? { ...base, holders: a.value.holders, lastToken: a.value.lastToken } : base
    })
    const infos = answers.flatMap((a, i) => (counted[i] && a.kind === 'answered' && a.value ? [a.value] : []))
    // A holder is one that a majority of the nodes has; partial grants of a
    // split vote are on their way out.
    const byOwner = new Map<string, HolderSummary[]>()
    for (const info of infos) for (const h of info.holders) byOwner.set(h.owner, [...(byOwner.get(h.owner) ?? []), h])
    const holders: HolderSummary[] = []
    for (const [owner, seen] of byOwner) {
      if (seen.length < majority) continue
      // The end a majority still has; the token of the grant is the highest
      // of its nodes' tokens (the lease took the highest of those that had
      // answered, and a straggler's higher grant is being given back; this
      // client knows its own leases' tokens).
      const ends = seen.map((h) => h.expiresAt).sort((x, y) => y - x)
      const token = this.holds.tokenOf(owner) ?? seen.map((h) => h.token).sort(descending)[0]!
      // Who asked and since when, as the nodes keep it (each node's own grant time; the earliest shown).
      const description = seen.find((h) => h.description !== undefined)?.description
      const since = Math.min(...seen.map((h) => h.since ?? Infinity))
      holders.push({
        owner, token, mode: seen[0]!.mode, expiresAt: ends[majority - 1]!,
        ...(description !== undefined ? { description } : {}),
        ...(Number.isFinite(since) ? { since } : {}),
      })
    }
    // Null only when no node has anything: a hold left on a minority (a node
    // excluded, a split vote on its way out) still shows in the per-node view.
    if (holders.length === 0 && waiters.length === 0 && !views.some((v) => v.holders?.length)) return null
    // The highest counter that a majority has reached: every granted token
    // was raised onto its majority, so it is at least each of them, and any
    // later majority shares a node with those, so the next token is above it.
    // (A single node's counter can be higher: a late or partial grant.)
    const counters = infos.map((info) => info.lastToken).sort(descending)
    const lastToken = counters[Math.min(counters.length, majority) - 1] ?? 0n
    const first = infos[0]
    return {
      name,
      kind: first?.kind ?? (waiters.some((w) => w.mode !== 'exclusive') ? 'rwlock' : 'mutex'),
      fair: first?.fair ?? false,
      permits: 1,
      holders,
      waiters,
      lastToken,
      nodes: views,
    }
  }

  /** Names from every node (its index of names in use), then the quorum's view of just the page's names, in order. */
  async *list(prefix: string, page?: ListPage): AsyncIterable<LockInfo> {
    const names = new Set<string>()
    const reached = await Promise.all(this.nodes.all.map(async (node) => {
      if (!node.driver) return false
      try {
        for (const name of await node.driver.names(prefix)) names.add(name)
        return true
      } catch {
        return false
      }
    }))
    if (reached.filter(Boolean).length < this.nodes.majority) {
      throw new BatonError('QUORUM_NOT_REACHED', `list() reached only ${reached.filter(Boolean).length} of ${this.nodes.size} redlock nodes`)
    }
    yield* inspectInOrder(namesOfPage(names, prefix, page), limitOf(page), (name) => this.inspect(name))
  }
}

const descending = (x: bigint, y: bigint): number => (x > y ? -1 : x < y ? 1 : 0)

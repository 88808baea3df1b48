import type { AcquireRequest, AcquireResult, HolderSummary, LockSpec } from '../../core/driver.js'
import { monotonicNow } from '../../core/clock.js'
import type { Answer } from './quorum.js'
import type { Line, LinePlace, LineSpot } from './line.js'
import type { NodeSet } from './node-set.js'
import type { RedlockNode } from './node.js'

/**
 * This client's side of the Redlock line: where each of its waiting owners
 * stands, which names it saw contended lately, and when a busy owner should
 * try again. Separate from the line's script calls (line.ts) and from the
 * attempt: this is the waiting policy, the attempt only asks it.
 */

/** How long seeing a line makes this client's newcomers for that name join it before asking the nodes. */
const CONTENDED_FOR_MS = 1000

export class Waiting {
  private readonly spots = new Map<string, LineSpot>()
  /** Names with a line lately (monotonic ms until which to join the line first). */
  private readonly lineSeen = new Map<string, number>()

  constructor(private readonly nodes: NodeSet, private readonly line: Line) {}

  spotOf(owner: string): LineSpot | undefined {
    return this.spots.get(owner)
  }

  /** The owner is first in line, as last seen. */
  isHead(owner: string): boolean {
    return this.spots.get(owner)?.rank === 0
  }

  /** The owner no longer waits (granted or released): true if it had a place in line. */
  forget(owner: string): boolean {
    return this.spots.delete(owner)
  }

  /** Woken by a release (the head) or a forced release (everyone, the line emptied): ask the nodes at once. */
  markWoken(owner: string): void {
    const spot = this.spots.get(owner)
    if (spot) {
      spot.woken = true
      // Woken (a release, a give-back): the next stall is the first again.
      spot.stalls = 0
      spot.rank = 0
    }
  }

  /** This client saw others in line for `name` lately: newcomers join the line before asking the nodes. */
  contended(name: string): boolean {
    const until = this.lineSeen.get(name)
    if (until === undefined) return false
    if (until > monotonicNow()) return true
    this.lineSeen.delete(name)
    return false
  }

  /** A look at the line showed others in it besides this owner: the name is contended for a while. */
  noteLine(request: AcquireRequest, place: LinePlace | undefined): void {
    if (place && place.length > (this.spots.has(request.owner) ? 1 : 0)) this.sawLine(request.name)
  }

  private sawLine(name: string): void {
    if (this.lineSeen.size >= 10_000) this.lineSeen.clear()
    this.lineSeen.set(name, monotonicNow() + CONTENDED_FOR_MS)
  }

  /** Only looks at the line on `lineNode` (no entry): undefined when it fails. */
  peek(lineNode: RedlockNode, request: AcquireRequest): Promise<LinePlace | undefined> {
    return this.line.place(lineNode.driver!, request, false).catch(() => undefined)
  }

  /** Joins (or refreshes, or only peeks at) the line; undefined when the line node is unreachable. */
  async placeInLine(request: AcquireRequest, join: boolean): Promise<LinePlace | undefined> {
    const node = this.nodes.lineNode()
    if (!node) return undefined
    try {
      const place = await this.line.place(node.driver!, request, join)
      if (place.length > 1) this.sawLine(request.name)
      if (join) {
        const spot = this.spots.get(request.owner)
        if (spot) spot.rank = place.rank
        else this.spots.set(request.owner, { rank: place.rank, woken: false, node: node.index })
      }
      return place
    } catch {
      return undefined
    }
  }

  /** Leaves the line, if this owner had a place in it. */
  leaveIfWaiting(spec: LockSpec & { owner: string }): void {
    if (!this.spots.delete(spec.owner)) return
    const node = this.nodes.lineNode()
    if (node) this.line.leave(node.driver!, spec).catch(() => {})
  }

  /** A busy answer: when to try again, and who holds the name. */
  busy(request: AcquireRequest, answers: Answer<AcquireResult>[] | undefined, place: LinePlace | undefined): AcquireResult {
    const busy = (answers ?? []).flatMap((a) => (a.kind === 'answered' && a.value.status === 'busy' ? [a.value] : []))
    const holder = mostCommonHolder(busy.map((b) => b.holder))
    // When a majority could be free again without a wake-up.
    const hints = busy.map((b) => b.retryAfterMs).sort((x, y) => x - y)
    let retryAfterMs = hints[Math.min(hints.length - 1, this.nodes.majority - 1)] ?? request.ttlMs
    const spot = this.spots.get(request.owner)
    if (spot && !(place && place.rank === 0 && place.free)) spot.stalls = 0
    if (place && place.rank === 0 && place.free) {
      // First in line and the name is free on the line node: the head goes
      // first. Other nodes may still hold it: a dying holder's keys were
      // set, so expire, a little later there (under load tens of ms later);
      // a releasing holder's release may not have reached them yet; a
      // barger may have split the vote. Retrying at once spun a head through
      // hundreds of attempts under load (the conformance herd test); waiting
      // for what those nodes said made a busy line crawl (a release on its
      // way reads as the whole remaining ttl). So: at once the first time (a
      // release on its way lands within a round trip), then after 1, 2, 4 …
      // ms for as many such attempts in a row, never later than the nodes
      // said. (Trusting a short report, ≤ 250 ms, as an expiry skew made a
      // hand-over wait out a short-ttl releasing holder's lease, and did
      // not lower the count under load.) A holder granted without the
      // line node (its vote there came late) looks like this for its whole
      // lease: it was a spin of hundreds of attempts, now ~log2(lease ms);
      // its release still wakes the head on the line node.
      const granted = (answers ?? []).filter((a) => a.kind === 'answered' && a.value.status === 'granted').length
      const lacking = Math.max(1, this.nodes.majority - granted)
      const stalls = spot ? (spot.stalls = (spot.stalls ?? 0) + 1) : 1
      const hint = hints.length === 0 ? 0 : hints[Math.min(hints.length, lacking) - 1]!
      retryAfterMs = Math.min(hint, stalls === 1 ? 0 : 2 ** Math.min(stalls - 2, 10))
    } else if (!place && request.enqueue) {
      // No line to wait in (the line node is unreachable): back off by a random delay.
      retryAfterMs = Math.min(retryAfterMs, 10 + Math.random() * 40)
    }
    return { status: 'busy', retryAfterMs, ...(holder ? { holder } : {}) }
  }
}

function mostCommonHolder(holders: readonly (HolderSummary | undefined)[]): HolderSummary | undefined {
  const counts = new Map<string, { holder: HolderSummary; n: number }>()
  for (const h of holders) {
    if (!h) continue
    const seen = counts.get(h.owner)
    if (seen) seen.n += 1
    else counts.set(h.owner, { holder: h, n: 1 })
  }
  let best: { holder: HolderSummary; n: number } | undefined
  for (const c of counts.values()) if (!best || c.n > best.n) best = c
  return best?.holder
}

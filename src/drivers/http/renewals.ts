import type { ExtendResult, HoldRef } from '../../core/driver.js'
import { monotonicNow } from '../../core/clock.js'
import { safetyMarginMs } from '../../core/margin.js'
import { unexpected, type Api } from './api.js'
import type { Holds } from './holds.js'
import type { ClientSession } from './session.js'

/** Lease ids given up in one keepalive, well under the server's body limit; the rest go with the next one. */
const MAX_GIVE_UP = 200

/** Per-lease renewals go in requests of at most this many bytes of lease ids, well under the server's body limit. */
const EXTEND_CHUNK_BYTES = 32 * 1024

/**
 * Renewing this client's leases: those on its session by the session's one
 * shared keepalive, whatever their count; the others (not renewed yet,
 * another ttl asked, a server that lost the session) in batch requests kept
 * under the server's body limit, sent with the session's id so that they
 * join it.
 */
export class Renewals {
  constructor(private readonly api: Api, private readonly holds: Holds, private readonly session: ClientSession) {}

  async extend(holds: readonly HoldRef[], ttlMs: number): Promise<ExtendResult[]> {
    const results: ExtendResult[] = holds.map(() => ({ status: 'lost' }))
    const session = this.session.id
    const onSession: number[] = []
    const single: number[] = []
    holds.forEach((hold, i) => {
      const mine = this.holds.get(hold.owner)
      if (!mine || mine.token !== hold.token) return
      if (session !== undefined && mine.session === session && mine.sessionTtlMs === ttlMs) onSession.push(i)
      else single.push(i)
    })
    if (onSession.length > 0) {
      const joinedAt = Math.max(...onSession.map((i) => this.holds.get(holds[i]!.owner)?.joinedAt ?? 0))
      const renewal = await this.session.keepalive(session!, joinedAt, ttlMs / 3, () => this.givenUp(session!))
      if (renewal) {
        const leftMs = Math.min(ttlMs, renewal.ttlMs) - (monotonicNow() - renewal.sentAt)
        for (const i of onSession) {
          const mine = this.holds.get(holds[i]!.owner)
          // Gone: the keepalive reported it lost (its holder was told), or it was released meanwhile.
          if (!mine || mine.token !== holds[i]!.token) continue
          results[i] = { status: 'extended', ttlMs: Math.max(0, Math.floor(leftMs)) }
          mine.until = renewal.sentAt + Math.min(ttlMs, renewal.ttlMs)
        }
      } else {
        // The server no longer has this session: renew these one by one, joining a new session.
        single.push(...onSession)
      }
    }
    if (single.length === 0) return results
    const joining = await this.session.current().catch(() => undefined)
    for (const chunk of chunksOf(single, (i) => this.holds.get(holds[i]!.owner)!.leaseId.length + 3, EXTEND_CHUNK_BYTES)) {
      await this.extendEach(holds, chunk, ttlMs, results, joining)
    }
    return results
  }

  /**
   * Leases on `session` this client no longer counts on (the core took them
   * for lost, so no renewal was asked for them in time): the keepalive
   * releases them rather than renewing a hold nobody uses.
   */
  private givenUp(session: string): string[] {
    const now = monotonicNow()
    const ids: string[] = []
    for (const mine of this.holds.all()) {
      if (ids.length >= MAX_GIVE_UP) break
      if (mine.session !== session || mine.until - safetyMarginMs(mine.sessionTtlMs) > now) continue
      mine.session = undefined
      ids.push(mine.leaseId)
    }
    return ids
  }

  /** One batch request renewing the leases of `holds` at `indexes`, results written into `results`. */
  private async extendEach(
    holds: readonly HoldRef[], indexes: readonly number[], ttlMs: number, results: ExtendResult[], session: string | undefined,
  ): Promise<void> {
    const leases = indexes.map((i) => this.holds.get(holds[i]!.owner)!.leaseId)
    const answer = await this.api.call<{ session?: boolean; results: { status: string; ttlMs?: number }[] }>(
      'POST', '/v1/leases/extend', { leases, ttl: ttlMs, ...(session !== undefined ? { session } : {}) },
    )
    if (!answer.ok) unexpected(answer.error)
    const now = monotonicNow()
    if (session !== undefined && answer.body.session === false) this.session.reset(session)
    indexes.forEach((i, n) => {
      const result = answer.body.results[n]
      const owner = holds[i]!.owner
      if (result?.status === 'extended' && result.ttlMs !== undefined) {
        results[i] = { status: 'extended', ttlMs: result.ttlMs }
        const mine = this.holds.get(owner)
        if (!mine) return
        mine.until = now + result.ttlMs
        if (session !== undefined && answer.body.session === true) {
          mine.session = session
          mine.sessionTtlMs = ttlMs
          mine.joinedAt = now
        }
      } else this.holds.forget(owner)
    })
  }
}

/** Groups `items` so that each group's summed `size` stays under `limit` (an item larger than it goes alone). */
function chunksOf<T>(items: readonly T[], size: (item: T) => number, limit: number): T[][] {
  const chunks: T[][] = []
  let current: T[] = []
  let bytes = 0
  for (const item of items) {
    const itemBytes = size(item)
    if (current.length > 0 && bytes + itemBytes > limit) {
      chunks.push(current)
      current = []
      bytes = 0
    }
    current.push(item)
    bytes += itemBytes
  }
  if (current.length > 0) chunks.push(current)
  return chunks
}

import type { ListPage, LockInfo } from '../../core/driver.js'
import { limitOf } from '../../core/list.js'
import { weightField } from '../../core/compat.js'
import { unexpected, type Api } from './api.js'
import { ownersByDigest } from './owners.js'
import { lockPath } from './wire.js'

type HolderBody = { owner: string; token: string; mode: LockInfo['holders'][number]['mode']; weight?: number; expiresAt: number; description?: string; since?: number; value?: string }
type WaiterBody = { owner: string; mode: LockInfo['holders'][number]['mode']; weight?: number; description?: string; since?: number }
interface LockBody {
  name: string
  kind: LockInfo['kind']
  fair: boolean
  permits: number
  holders: HolderBody[]
  waiters: WaiterBody[]
  lastToken: string
}

/**
 * What the operator reads through the server: one name (GET /v1/locks/{name})
 * and the paged list, with this process's own owners shown under the names
 * it knows them by (owners.ts).
 */
export class Inspector {
  constructor(private readonly api: Api) {}

  async inspect(name: string): Promise<LockInfo | null> {
    const answer = await this.api.call<LockBody>('GET', lockPath(name, ''))
    if (!answer.ok) {
      if (answer.error.status === 404 && answer.error.code === 'NOT_FOUND') return null
      unexpected(answer.error)
    }
    return lockInfo(answer.body)
  }

  /** The server's pages (its cursor is the last name of a page, base64url), up to the limit asked. */
  async *list(prefix: string, page?: ListPage): AsyncIterable<LockInfo> {
    let cursor = page?.after === undefined ? undefined : Buffer.from(page.after).toString('base64url')
    let left = limitOf(page)
    while (left > 0) {
      const size = Math.min(1000, left)
      const query = new URLSearchParams({ prefix, limit: String(size), ...(cursor ? { cursor } : {}) })
      const answer = await this.api.call<{ locks: LockBody[]; nextCursor?: string }>('GET', `/v1/locks?${query}`)
      if (!answer.ok) unexpected(answer.error)
      for (const lock of answer.body.locks) yield lockInfo(lock)
      left -= answer.body.locks.length
      cursor = answer.body.nextCursor
      if (!cursor) return
    }
  }
}

function lockInfo(body: LockBody): LockInfo {
  const owner = (digest: string) => ownersByDigest.get(digest) ?? digest
  return {
    name: body.name, kind: body.kind, fair: body.fair, permits: body.permits,
    holders: body.holders.map((h) => ({
      owner: owner(h.owner), token: BigInt(h.token), mode: h.mode, ...weightField(h.mode, h.weight), expiresAt: h.expiresAt, ...described(h),
      ...(h.value !== undefined ? { value: h.value } : {}),
    })),
    waiters: body.waiters.map((w) => ({ owner: owner(w.owner), mode: w.mode, ...weightField(w.mode, w.weight), ...described(w) })),
    lastToken: BigInt(body.lastToken),
  }
}

/** The optional "who" fields of a holder or waiter, when the server sent them. */
function described(entry: { description?: string; since?: number }): { description?: string; since?: number } {
  return { ...(entry.description !== undefined ? { description: entry.description } : {}), ...(entry.since !== undefined ? { since: entry.since } : {}) }
}

import type { ListPage, LockInfo } from '../../core/driver.js'
import { limitOf } from '../../core/list.js'

/**
 * How the SQL stores (PostgreSQL, MySQL) show names alike: list pages by a
 * LIKE prefix in the table's byte order, and the "who" fields of a holder
 * or waiter.
 */

/** Names per page of list(). */
export const LIST_PAGE = 500

/** One page as a SQL store read it: the names in use found, how many names it read, the last one read. */
export interface PageRead {
  infos: LockInfo[]
  /** Names read, in use or not by the time each was read: fewer than asked means the end. */
  read: number
  last: string | undefined
}

/** list()'s walk: pages of at most LIST_PAGE names after the cursor, until the limit or a short page. */
export async function* pagesOf(page: ListPage | undefined, readPage: (after: string, size: number) => Promise<PageRead>): AsyncIterable<LockInfo> {
  let after = page?.after ?? ''
  let left = limitOf(page)
  while (left > 0) {
    const size = Math.min(LIST_PAGE, left)
    const { infos, read, last } = await readPage(after, size)
    yield* infos
    if (read < size || last === undefined) return
    left -= infos.length
    after = last
  }
}

/** The LIKE pattern of names starting with `prefix` (its own %, _ and \ escaped). */
export function likePattern(prefix: string): string {
  return prefix.replace(/[\\%_]/g, '\\$&') + '%'
}

/** The description and since of a hold or line entry, when the row has them (PostgreSQL rows from before its schema version 2 do not). */
export function described(entry: { description?: string | null; since?: number | null }): { description?: string; since?: number } {
  return {
    ...(entry.description ? { description: entry.description } : {}),
    ...(entry.since !== null && entry.since !== undefined ? { since: Number(entry.since) } : {}),
  }
}

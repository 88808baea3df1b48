/**
 * How the SQL stores (PostgreSQL, MySQL) show names alike: list pages by a
 * LIKE prefix in the table's byte order, and the "who" fields of a holder
 * or waiter.
 */

/** Names per page of list(). */
export const LIST_PAGE = 500

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

import type { ListPage, LockInfo } from './driver.js'

/**
 * Shared parts of `Driver.list`'s paging. Pages are in the byte order of
 * the names' UTF-8 (what PostgreSQL's "C" collation, etcd and Redis compare),
 * so a cursor (`after`, the last name of a page) means the same on every
 * store and through every server.
 */

/** UTF-8 byte order of two names. */
export function compareNames(a: string, b: string): number {
  if (a === b) return 0
  // UTF-16 code unit order is code point order (and so UTF-8 byte order)
  // except between a surrogate pair and U+E000..U+FFFF: only then compare bytes.
  if (!/[\ud800-\uffff]/.test(a) && !/[\ud800-\uffff]/.test(b)) return a < b ? -1 : 1
  return Buffer.compare(Buffer.from(a), Buffer.from(b))
}

/** The names of `names` under `prefix` and after the page's cursor, each once, in byte order. */
export function namesOfPage(names: Iterable<string>, prefix: string, page: ListPage | undefined): string[] {
  const after = page?.after
  const out = new Set<string>()
  for (const name of names) {
    if (name.startsWith(prefix) && (after === undefined || compareNames(name, after) > 0)) out.add(name)
  }
  return [...out].sort(compareNames)
}

/** How many locks a page may hold: `limit`, or no bound. */
export function limitOf(page: ListPage | undefined): number {
  return page?.limit ?? Infinity
}

/**
 * Inspects `names` (in page order) a batch at a time, in parallel within a
 * batch, and yields the ones in use until `limit` are yielded: a name that
 * went idle meanwhile does not shorten the page, and a page of 50 out of
 * 10,000 names costs about 50 inspects, not 10,000.
 */
export async function* inspectInOrder(
  names: readonly string[], limit: number, inspect: (name: string) => Promise<LockInfo | null>, batch = 64,
): AsyncIterable<LockInfo> {
  let yielded = 0
  for (let at = 0; at < names.length && yielded < limit; ) {
    const size = Math.min(batch, names.length - at, Math.max(1, limit - yielded))
    const infos = await Promise.all(names.slice(at, at + size).map(inspect))
    at += size
    for (const info of infos) {
      if (!info) continue
      yield info
      if (++yielded >= limit) return
    }
  }
}

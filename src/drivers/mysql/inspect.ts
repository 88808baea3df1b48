import type { ListPage, LockInfo, LockKind } from '../../core/driver.js'
import { weightField } from '../../core/compat.js'
import { described, likePattern, pagesOf } from '../sql-common/info.js'
import { entryOf, holdOf, summary, type HoldRecord, type LineRecord } from './name-state.js'
import type { Transactions, Tx } from './tx.js'

interface InfoName { name: Buffer; kind: LockKind; fair: number; permits: number; last_token: string; now_us: string }

/** What the operator reads: one name, and the paged list, each from one consistent snapshot. */
export class Inspector {
  constructor(private readonly transactions: Transactions) {}

  async inspect(name: string): Promise<LockInfo | null> {
    const [info] = await this.transactions.snapshot(async (tx) => {
      const names = await tx.read<InfoName>('info-name', [name])
      return infos(tx, names)
    })
    return info ?? null
  }

  /**
   * The tables' own order (names are VARBINARY: byte order), from the
   * cursor, LIMIT the page; names are taken from the holds and the line
   * (sql/info-names.sql), so idle names cost nothing.
   */
  async *list(prefix: string, page?: ListPage): AsyncIterable<LockInfo> {
    const pattern = Buffer.from(likePattern(prefix))
    yield* pagesOf(page, (after, size) => this.transactions.snapshot(async (tx) => {
      const bounds = [pattern, Buffer.from(after), size]
      const names = await tx.read<InfoName>('info-names', [...bounds, ...bounds, size])
      return { infos: await infos(tx, names), read: names.length, last: names.at(-1)?.name.toString('utf8') }
    }))
  }
}

/** Holders and waiters of the names read, from the same snapshot; names nobody uses are left out. */
async function infos(tx: Tx, names: InfoName[]): Promise<LockInfo[]> {
  if (names.length === 0) return []
  const list = names.map((n) => n.name)
  const [holdRows, lineRows] = await tx.readMany([['info-holds', [list]], ['info-line', [list]]])
  const holds = byName(holdRows as (HoldRecord & { name: Buffer })[])
  const line = byName(lineRows as (LineRecord & { name: Buffer })[])
  const found: LockInfo[] = []
  for (const row of names) {
    const now = Number(row.now_us)
    const name = row.name.toString('utf8')
    const mine = (holds.get(row.name.toString('latin1')) ?? []).map(holdOf)
    const waiting = (line.get(row.name.toString('latin1')) ?? []).map(entryOf).filter((w) => w.staleAt > now)
    if (!mine.some((h) => h.blockedUntil > now) && waiting.length === 0) continue
    found.push({
      name, kind: row.kind, fair: Boolean(row.fair), permits: row.permits,
      holders: mine.filter((h) => h.expiresAt > now).map(summary),
      waiters: waiting.map((w) => ({ owner: w.owner, mode: w.mode, ...weightField(w.mode, w.weight), ...described(w) })),
      lastToken: BigInt(row.last_token),
    })
  }
  return found
}

/** Rows grouped by their name's bytes (latin1 keeps every byte), in the order read: a page's 500 names are not each matched against every row. */
function byName<R extends { name: Buffer }>(rows: R[]): Map<string, R[]> {
  const groups = new Map<string, R[]>()
  for (const row of rows) {
    const key = row.name.toString('latin1')
    const group = groups.get(key)
    if (group) group.push(row)
    else groups.set(key, [row])
  }
  return groups
}

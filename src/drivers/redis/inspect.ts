import type { HolderSummary, ListPage, LockInfo, WaiterSummary } from '../../core/driver.js'
import { compareNames, inspectInOrder, limitOf, namesOfPage } from '../../core/list.js'
import { backendUnavailable } from '../../core/errors.js'
import { weightField } from '../../core/compat.js'
import type { Redis } from 'ioredis'
import { ClusterIndex, rangeArgs, type IndexRange } from './cluster-list.js'
import type { RedisClient, RedisTarget } from './connection.js'
import { listedKey } from './keys.js'
import { described, LETTER_KIND, LETTER_MODE, parseHolder, weightInSpec } from './members.js'
import type { NameScripts } from './name-scripts.js'

/**
 * What the operator reads: one name's holders and line (inspect.lua), the
 * names in use (the index the scripts keep) and the paged list. Apart from
 * the calls that change holds: they only read, but for list dropping the
 * names it finds idle from the index.
 */
export class Inspector {
  /** On a Cluster, its per-slot indexes of names in use. */
  private readonly clusterIndex: ClusterIndex | undefined

  constructor(private readonly scripts: NameScripts, private readonly client: RedisClient, private readonly target: RedisTarget) {
    this.clusterIndex = 'nodes' in client ? new ClusterIndex(client, target.keyPrefix) : undefined
  }

  async inspect(name: string): Promise<LockInfo | null> {
    const [now, lastToken, holders, line] = (await this.scripts.call('inspect', name, [])) as [number, string, string[], string[]]
    const summaries: HolderSummary[] = []
    for (let i = 0; i < holders.length; i += 4) {
      summaries.push(described(parseHolder(holders[i]!, Number(holders[i + 1]), true), holders[i + 2]!, holders[i + 3]!))
    }
    const live = summaries.filter((h) => h.expiresAt > now)
    const waiters: (WaiterSummary & { spec: string })[] = []
    for (let i = 0; i < line.length; i += 2) {
      const info = line[i + 1]!
      const [spec = '', , , staleAt = '0', since = ''] = info.split('|', 5)
      const description = info.split('|').slice(5).join('|')
      const mode = LETTER_MODE[spec[0]!] ?? 'exclusive'
      if (Number(staleAt) > now) waiters.push(described({ owner: line[i]!, mode, ...weightField(mode, weightInSpec(spec)), spec }, since, description))
    }
    if (summaries.length === 0 && waiters.length === 0) return null
    const spec = holders[0]?.split('|')[1] ?? waiters[0]!.spec
    const permits = /^\D(\d+)/.exec(spec)?.[1]
    return {
      name,
      kind: LETTER_KIND[spec[0]!] ?? 'mutex',
      fair: spec.endsWith('f'),
      permits: permits === undefined ? 1 : Number(permits),
      holders: live,
      waiters: waiters.map(({ spec: _, ...waiter }) => waiter),
      lastToken: BigInt(lastToken),
    }
  }

  /**
   * The index of names in use (keys.ts listedKey) is read in byte order
   * from the page's cursor on, a page's worth (and a little more) at a time,
   * so a page costs its own names and about as many inspects, however many
   * names are in use or idle. The index is a superset: a name found idle (a
   * holder that died, never released) is dropped from it on the way
   * (unlist.lua), and the next names are read in its place.
   */
  async *list(prefix: string, page?: ListPage): AsyncIterable<LockInfo> {
    let left = limitOf(page)
    const count = left === Infinity ? undefined : left + 16
    for (let after = page?.after; ;) {
      const names = await this.listed(prefix, after, count)
      for await (const info of inspectInOrder(names, left, (name) => this.inspectOrUnlist(name))) {
        yield info
        left--
      }
      if (left <= 0 || count === undefined || names.length < count) return
      after = names.at(-1)
    }
  }

  private async inspectOrUnlist(name: string): Promise<LockInfo | null> {
    const info = await this.inspect(name)
    if (!info) await this.scripts.call('unlist', name, [])
    return info
  }

  /** Names in use under `prefix` (maybe some gone idle since), from the index of names in use. */
  async names(prefix: string): Promise<Set<string>> {
    return new Set(await this.listed(prefix))
  }

  /**
   * The first `count` (default all) listed names under `prefix` and after
   * `after`, in byte order: one ZRANGEBYLEX on a single Redis; on a Cluster
   * one list-slots.lua call per master for the slots it serves, each giving
   * the first `count` names of its slots' indexes (cluster-list.ts), so the
   * first `count` of them all are the index's.
   */
  private async listed(prefix: string, after?: string, count?: number): Promise<string[]> {
    // "(" after the cursor, "[" from the prefix; 0xff never occurs in UTF-8, so "<prefix>\xff" bounds the prefix.
    const min = after !== undefined && compareNames(after, prefix) >= 0 ? `(${after}` : `[${prefix}`
    const max = prefix === '' ? '+' : Buffer.concat([Buffer.from(`(${prefix}`), Buffer.from([0xff])])
    const range: IndexRange = { min, max, count }
    const names = new Set<string>()
    const add = (found: unknown): void => {
      for (const name of found as string[]) names.add(name)
    }
    try {
      if (this.clusterIndex) await this.clusterIndex.read(range, add)
      else add(await (this.client as Redis).zrangebylex(listedKey(this.target.keyPrefix), ...rangeArgs(range)))
    } catch (cause) {
      throw backendUnavailable(`redis store at ${this.target.display}`, cause)
    }
    const sorted = namesOfPage(names, prefix, after === undefined ? undefined : { after })
    return count === undefined ? sorted : sorted.slice(0, count)
  }
}

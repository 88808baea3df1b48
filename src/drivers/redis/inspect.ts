import type { HolderSummary, ListPage, LockInfo, WaiterSummary } from '../../core/driver.js'
import { inspectInOrder, limitOf, namesOfPage } from '../../core/list.js'
import { backendUnavailable } from '../../core/errors.js'
import { weightField } from '../../core/compat.js'
import type { RedisClient, RedisTarget } from './connection.js'
import { nameOfKey, scanPattern } from './keys.js'
import { described, FREE_HOLD_KEY, LETTER_KIND, LETTER_MODE, parseHolder, weightInSpec } from './members.js'
import type { NameScripts } from './name-scripts.js'

/**
 * What the operator reads: one name's holders and line (inspect.lua), the
 * names in use (SCAN on every master) and the paged list. Read-only, so
 * apart from the calls that change holds.
 */
export class Inspector {
  constructor(private readonly scripts: NameScripts, private readonly client: RedisClient, private readonly target: RedisTarget) {}

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
   * SCAN is unordered and has no range, so a page can not be read in order
   * from Redis: the names under the prefix are collected with SCAN (key names
   * only, cheap), sorted here, and only the page's names are inspected, in
   * order, until the page is full. A page of 50 of 10,000 locks is then one
   * SCAN pass and about 50 inspects, instead of 10,000 inspects.
   */
  async *list(prefix: string, page?: ListPage): AsyncIterable<LockInfo> {
    const names = namesOfPage(await this.names(prefix), prefix, page)
    yield* inspectInOrder(names, limitOf(page), (name) => this.inspect(name))
  }

  /** Names with keys under `prefix` (in use or not), unordered, by SCAN on every master. */
  async names(prefix: string): Promise<Set<string>> {
    const names = new Set<string>()
    const nodes = 'nodes' in this.client ? this.client.nodes('master') : [this.client]
    try {
      for (const node of nodes) {
        let cursor = '0'
        do {
          const [next, keys] = await node.scan(cursor, 'MATCH', scanPattern(this.target.keyPrefix, prefix), 'COUNT', 1000)
          cursor = next
          // A name whose only key is its hold key may be idle: the key then
          // keeps just the fencing counter (for fenceTtl) and lists nothing.
          // Those are read in one pipeline, so idle names are not inspected.
          const holdOnly = new Map<string, string>()
          for (const key of keys) {
            const name = nameOfKey(this.target.keyPrefix, key)
            if (name === undefined || names.has(name)) continue
            if (key.endsWith('}:x')) holdOnly.set(name, key)
            else names.add(name)
          }
          for (const name of names) holdOnly.delete(name)
          if (holdOnly.size > 0) {
            const pipeline = node.pipeline()
            for (const key of holdOnly.values()) pipeline.get(key)
            const values = (await pipeline.exec()) ?? []
            let i = 0
            for (const name of holdOnly.keys()) {
              const [error, value] = values[i++] ?? [null, null]
              if (error || (typeof value === 'string' && !FREE_HOLD_KEY.test(value))) names.add(name)
            }
          }
        } while (cursor !== '0')
      }
    } catch (cause) {
      throw backendUnavailable(`redis store at ${this.target.display}`, cause)
    }
    return names
  }
}

/**
 * The known exceptions: where a store documents that it can not keep a
 * property under a fault. The checker reports a violation that one of
 * these covers apart ("excused"), never drops it; docs/faults.md carries
 * the same table, rendered by renderExceptions() and checked by a test.
 */

/** What the checker checks; each violation is of one of these. */
export type Property =
  | 'two-holders' | 'over-permits' | 'reader-beside-writer' | 'two-leaders' | 'observer-order' | 'observer-skipped-term'
  | 'token-order' | 'stale-write' | 'lost-update' | 'looks-held-after-deadline' | 'renewed-after-lapse' | 'leftover-state' | 'waiter-starved' | 'ghost-grant' | 'loss-unnoticed'

export interface KnownException {
  /** Store kinds it applies to (as the chaos runner and `baton verify` name them). */
  readonly stores: readonly string[]
  /** Fault kinds that open the window. */
  readonly faults: readonly string[]
  readonly properties: readonly Property[]
  /** How long after the fault healed the window stays open, in leases (ttls) of the run. */
  readonly leases: number
  readonly why: string
}

export const KNOWN_EXCEPTIONS: readonly KnownException[] = [
  {
    stores: ['redis', 'redis-cluster'],
    faults: ['store-restart'],
    properties: ['two-holders', 'over-permits', 'reader-beside-writer', 'two-leaders'],
    leases: 2,
    why: 'a Redis server without persistence restarts empty and can tell nobody: another client may be let in while the old holder learns at its next renewal; tokens still increase',
  },
  {
    stores: ['redis-sentinel', 'redis-cluster'],
    faults: ['failover', 'store-restart'],
    properties: ['two-holders', 'over-permits', 'reader-beside-writer', 'two-leaders', 'token-order'],
    leases: 2,
    why: 'Redis replicates asynchronously: a promoted replica may not have the newest holds (or token counters), so a second holder can be let in; use Redlock, or fence',
  },
  {
    stores: ['redis-sentinel', 'redis-cluster'],
    faults: ['failover'],
    properties: ['ghost-grant'],
    leases: 2,
    why: 'a promoted replica may be behind on a name\'s token counter: a lower token granted later no longer shows that a hold with a higher one came after it',
  },
  {
    stores: ['redis-cluster'],
    faults: ['migrating-failover'],
    properties: ['two-holders', 'over-permits', 'reader-beside-writer', 'two-leaders', 'token-order', 'ghost-grant'],
    leases: 2,
    why: 'a master killed while one of its slots migrates: besides what a failover loses, the keys already moved sit on a target that serves them to nobody until an operator fixes the slot, so their names look free on the promoted replica meanwhile; finishing the move lets the serving side\'s keys win',
  },
  {
    stores: ['http-memory'],
    faults: ['store-restart-wiped'],
    properties: ['two-holders', 'over-permits', 'reader-beside-writer', 'two-leaders', 'token-order', 'observer-order', 'observer-skipped-term', 'ghost-grant'],
    leases: 2,
    why: 'the lock server on memory:// without its data directory (none given and --no-restart-wait, or the directory lost) forgets every hold and starts its token counters again when it restarts (capabilities.durableTokens is false); with it, grants wait out the old leases and tokens continue',
  },
]

/** The exception covering `property` on `store` for a fault of `fault`, if any. */
export function exceptionFor(store: string, fault: string, property: Property): KnownException | undefined {
  return KNOWN_EXCEPTIONS.find((e) => e.stores.includes(store) && e.faults.includes(fault) && e.properties.includes(property))
}

/** Why `store` may break `property` under some fault, if an exception says so (`baton verify` says it beside the violation). */
export function knownLimitOf(store: string, property: Property): KnownException | undefined {
  return KNOWN_EXCEPTIONS.find((e) => e.stores.includes(store) && e.properties.includes(property))
}

/** The table as docs/faults.md shows it (between its chaos-exceptions markers). */
export function renderExceptions(): string {
  const rows = KNOWN_EXCEPTIONS.map((e) =>
    `| ${e.stores.map((s) => `\`${s}\``).join(', ')} | ${e.faults.join(', ')} | ${e.properties.join(', ')} | ${e.leases} ttl | ${e.why} |`)
  return ['| stores | faults | properties | window after the fault | why |', '|---|---|---|---|---|', ...rows].join('\n')
}

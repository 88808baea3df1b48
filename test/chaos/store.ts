/** What a chaos store is: its kind, its URL, its servers' ports and its own faults (stores.ts starts one). */
import type { ChildProcess } from 'node:child_process'
import type { Random } from '../../src/chaos/prng.js'

export const STORE_KINDS = ['redis', 'redis-cluster', 'redis-sentinel', 'redlock', 'postgres', 'mysql', 'etcd', 'etcd-cluster', 'zookeeper', 'zookeeper-ensemble', 'http-memory', 'http-redis'] as const
export type StoreKind = (typeof STORE_KINDS)[number]

export interface ChaosStore {
  readonly kind: StoreKind
  readonly url: string
  /** The ports of `url`'s servers, for proxies; empty when clients can not be proxied (they follow the addresses the servers announce). */
  readonly proxyPorts: readonly number[]
  /**
   * Faults of this store beside the generic ones: name → make it (resolves
   * when healed, with what it did). `random` is the nemesis's seeded draw
   * (a seed replays the same faults on the same targets); `names`, the lock
   * names the run's clients use; `run`, the run's client processes and ttl
   * (a fault of the store may aim at a client, e.g. past its session).
   */
  readonly faults: Readonly<Record<string, StoreFault>>
  close(): Promise<void>
}

export interface RunView {
  /** Client processes alive now, by process index. */
  readonly children: () => ReadonlyMap<number, ChildProcess>
  readonly ttlMs: number
  /** The run's names that have a holder now (read by the runner). */
  readonly heldNames: () => Promise<string[]>
  /** A forced release of `name` by the runner, recorded in the history (actor process -1): its answer. */
  readonly forceRelease: (name: string) => Promise<boolean>
}

export type StoreFault = (random: Random, names: readonly string[], run: RunView) => Promise<string | StoreFaultDone>

/** What a store fault did; `emptied` when it left the store (or the part keeping `names`) empty from `at` on. */
export interface StoreFaultDone {
  readonly detail: string
  readonly emptied?: { readonly at: number; readonly names?: readonly string[] }
}

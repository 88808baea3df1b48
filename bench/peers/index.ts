import { asyncMutex } from './async-mutex.js'
import { etcd3Lock, etcdServerLock } from './etcd.js'
import { zkRecipe } from './zk-recipe.js'
import { baton, batonFair, batonMemory, batonRead, batonSemaphore } from './baton.js'
import { pgUpdate } from './pg-update.js'
import { mysqlUpdate } from './mysql-update.js'
import { raw } from './raw.js'
import { redisSemaphore, redisSemaphoreCounting, redisSemaphoreRedlock } from './redis-semaphore.js'
import { redlock } from './redlock.js'
import { sesameRedlock } from './sesame-redlock.js'
import type { Contender, PeerDef, Profile } from './types.js'

export type { Contender, PeerDef, Profile, Release } from './types.js'

/** Every contender adapter, by id. Add a peer: write bench/peers/<peer>.ts and list it here. */
export const PEERS = {
  raw, baton, redlock, 'sesame-redlock': sesameRedlock, 'redis-semaphore': redisSemaphore,
  'async-mutex': asyncMutex, 'baton-memory': batonMemory,
  'baton-fair': batonFair, 'baton-rwlock-read': batonRead, 'baton-semaphore': batonSemaphore,
  'pg-update': pgUpdate, 'mysql-update': mysqlUpdate,
  'etcd3-lock': etcd3Lock, 'etcd-v3lock': etcdServerLock, 'zk-recipe': zkRecipe,
  'redis-semaphore-sem': redisSemaphoreCounting, 'redis-semaphore-redlock': redisSemaphoreRedlock,
} as const satisfies Record<string, PeerDef>

export type PeerId = keyof typeof PEERS

/** Serializable description of one contender (it travels to bench workers over IPC). */
export interface ContenderSpec {
  readonly peer: PeerId
  readonly profile: Profile
  readonly ttlMs: number
  readonly waitMs: number
  /** Semaphore contenders: how many permits (1 otherwise). */
  readonly permits: number
}

export const DEFAULT_TTL_MS = 10_000
export const DEFAULT_WAIT_MS = 30_000

export function spec(
  peer: PeerId, profile: Profile = 'default', overrides: Partial<Pick<ContenderSpec, 'ttlMs' | 'waitMs' | 'permits'>> = {},
): ContenderSpec {
  return { peer, profile, ttlMs: overrides.ttlMs ?? DEFAULT_TTL_MS, waitMs: overrides.waitMs ?? DEFAULT_WAIT_MS, permits: overrides.permits ?? 1 }
}

/** Stable id of a spec: "redlock:fast", "baton-semaphore:default/8". */
export function specId(s: ContenderSpec): string {
  return `${s.peer}:${s.profile}${s.permits !== 1 ? `/${s.permits}` : ''}`
}

export function specLabel(s: ContenderSpec): string {
  return PEERS[s.peer].label(s.profile)
}

export function createContender(s: ContenderSpec, url: string): Promise<Contender> {
  return PEERS[s.peer].create({ url, ttlMs: s.ttlMs, waitMs: s.waitMs, profile: s.profile, permits: s.permits })
}

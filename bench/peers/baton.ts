import { batonContender } from '../../src/bench/contender.js'
import { connect, type Baton, type LockHandle } from '../../src/index.js'
import type { PeerDef, PeerOptions } from './types.js'

/** Which of baton's primitives a contender drives, as a handle on `key`. */
type HandleOf = (baton: Baton, key: string, options: PeerOptions) => LockHandle

/** A baton PeerDef on `url` (or the options' Redis URL) driving the handle `handleOf` makes. */
function batonPeer(id: string, store: PeerDef['store'], label: string, handleOf: HandleOf, url?: string): PeerDef {
  return {
    id,
    store,
    label: () => label,
    async create(options) {
      const baton = await connect(url ?? options.url)
      return batonContender(baton, label, (key) => handleOf(baton, key, options), options.waitMs)
    },
  }
}

const mutexOf: HandleOf = (baton, key, { ttlMs }) => baton.mutex(key, { ttl: ttlMs })

/** baton mutexes (not fair, the default). */
export const baton = batonPeer('baton', 'redis', 'baton', mutexOf)

export const batonMemory = batonPeer('baton-memory', 'memory', 'baton (memory://)', mutexOf, 'memory://')

/** baton mutexes with `fair: true`: granted strictly in arrival order. */
export const batonFair = batonPeer('baton-fair', 'redis', 'baton (fair: true)', (b, key, { ttlMs }) => b.mutex(key, { ttl: ttlMs, fair: true }))

/** The shared side of a baton read-write lock: `rwlock(key).read()`. */
export const batonRead = batonPeer('baton-rwlock-read', 'redis', 'baton rwlock read()', (b, key, { ttlMs }) => b.rwlock(key, { ttl: ttlMs }).read())

/** A baton semaphore with `permits` permits (PeerOptions.permits). */
export const batonSemaphore = batonPeer('baton-semaphore', 'redis', 'baton semaphore', (b, key, { ttlMs, permits }) => b.semaphore(key, { permits, ttl: ttlMs }))

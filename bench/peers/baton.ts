import { connect, type Baton, type LockHandle } from '../../src/index.js'
import type { Contender, PeerDef, PeerOptions } from './types.js'

/** Which of baton's primitives a contender drives, as a handle on `key`. */
type HandleOf = (baton: Baton, key: string, options: PeerOptions) => LockHandle

/** One baton handle per key (a mutex, one side of an rwlock, a semaphore), made once and reused. */
async function batonContender(baton: Baton, label: string, options: PeerOptions, handleOf: HandleOf): Promise<Contender> {
  const handles = new Map<string, LockHandle>()
  const handle = (key: string): LockHandle => {
    let h = handles.get(key)
    if (!h) {
      h = handleOf(baton, key, options)
      handles.set(key, h)
    }
    return h
  }
  const { waitMs } = options
  return {
    label,
    async acquire(key) {
      const lease = await handle(key).acquire({ wait: waitMs })
      return () => lease.release()
    },
    async tryAcquire(key) {
      const lease = await handle(key).tryAcquire()
      return lease ? () => lease.release() : null
    },
    close: () => baton.close(),
  }
}

/** A baton PeerDef on `url` (or the options' Redis URL) driving the handle `handleOf` makes. */
function batonPeer(id: string, store: PeerDef['store'], label: string, handleOf: HandleOf, url?: string): PeerDef {
  return {
    id,
    store,
    label: () => label,
    async create(options) {
      return batonContender(await connect(url ?? options.url), label, options, handleOf)
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

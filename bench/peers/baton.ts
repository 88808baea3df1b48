import { connect, type Baton, type Mutex } from '../../src/index.js'
import type { Contender, PeerDef, PeerOptions } from './types.js'

/** baton mutexes, one Mutex object per key, reused. */
async function batonContender(baton: Baton, label: string, { ttlMs, waitMs }: PeerOptions): Promise<Contender> {
  const mutexes = new Map<string, Mutex>()
  const mutexOf = (key: string): Mutex => {
    let mutex = mutexes.get(key)
    if (!mutex) {
      mutex = baton.mutex(key, { ttl: ttlMs })
      mutexes.set(key, mutex)
    }
    return mutex
  }
  return {
    label,
    async acquire(key) {
      const lease = await mutexOf(key).acquire({ wait: waitMs })
      return () => lease.release()
    },
    async tryAcquire(key) {
      const lease = await mutexOf(key).tryAcquire()
      return lease ? () => lease.release() : null
    },
    close: () => baton.close(),
  }
}

export const baton: PeerDef = {
  id: 'baton',
  store: 'redis',
  label: () => 'baton',
  async create(options) {
    return batonContender(await connect(options.url), baton.label('default'), options)
  },
}

export const batonMemory: PeerDef = {
  id: 'baton-memory',
  store: 'memory',
  label: () => 'baton (memory://)',
  async create(options) {
    return batonContender(await connect('memory://'), batonMemory.label('default'), options)
  },
}

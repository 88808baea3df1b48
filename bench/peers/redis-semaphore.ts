import { Mutex } from 'redis-semaphore'
import { closeRedis, openRedis } from './redis-client.js'
import type { PeerDef } from './types.js'

/** redis-semaphore's Mutex: a new Mutex object per acquisition, as its docs do. No auto-refresh. */
export const redisSemaphore: PeerDef = {
  id: 'redis-semaphore',
  store: 'redis',
  label: (profile) => `redis-semaphore (${profile === 'fast' ? 'retry 1 ms' : 'defaults: retry 10 ms'})`,
  async create({ url, ttlMs, waitMs, profile }) {
    const client = await openRedis(url)
    const options = {
      lockTimeout: ttlMs,
      acquireTimeout: waitMs,
      refreshInterval: 0,
      ...(profile === 'fast' ? { retryInterval: 1 } : {}),
    }
    return {
      label: redisSemaphore.label(profile),
      async acquire(key) {
        const mutex = new Mutex(client, key, options)
        await mutex.acquire()
        return () => mutex.release()
      },
      async tryAcquire(key) {
        const mutex = new Mutex(client, key, options)
        return (await mutex.tryAcquire()) ? () => mutex.release() : null
      },
      close: () => closeRedis(client),
    }
  },
}

import { Mutex, RedlockMutex, Semaphore } from 'redis-semaphore'
import { closeNodes, closeRedis, openNodes, openRedis } from './redis-client.js'
import type { PeerDef, PeerOptions, Profile } from './types.js'

function profileLabel(profile: Profile): string {
  return profile === 'fast' ? 'retry 1 ms' : 'defaults: retry 10 ms'
}

/** Our wait and ttl, no auto-refresh; 'fast' retries every 1 ms, 'default' keeps the library's 10 ms. */
function lockOptions({ ttlMs, waitMs, profile }: PeerOptions) {
  return {
    lockTimeout: ttlMs,
    acquireTimeout: waitMs,
    refreshInterval: 0,
    ...(profile === 'fast' ? { retryInterval: 1 } : {}),
  }
}

/** redis-semaphore's Mutex: a new Mutex object per acquisition, as its docs do. No auto-refresh. */
export const redisSemaphore: PeerDef = {
  id: 'redis-semaphore',
  store: 'redis',
  label: (profile) => `redis-semaphore (${profileLabel(profile)})`,
  async create(options) {
    const client = await openRedis(options.url)
    const lock = lockOptions(options)
    return {
      label: redisSemaphore.label(options.profile),
      async acquire(key) {
        const mutex = new Mutex(client, key, lock)
        await mutex.acquire()
        return () => mutex.release()
      },
      async tryAcquire(key) {
        const mutex = new Mutex(client, key, lock)
        return (await mutex.tryAcquire()) ? () => mutex.release() : null
      },
      close: () => closeRedis(client),
    }
  },
}

/** redis-semaphore's Semaphore with `permits` permits: a new Semaphore object per acquisition. No auto-refresh. */
export const redisSemaphoreCounting: PeerDef = {
  id: 'redis-semaphore-sem',
  store: 'redis',
  label: (profile) => `redis-semaphore Semaphore (${profileLabel(profile)})`,
  async create(options) {
    const client = await openRedis(options.url)
    const lock = lockOptions(options)
    return {
      label: redisSemaphoreCounting.label(options.profile),
      async acquire(key) {
        const semaphore = new Semaphore(client, key, options.permits, lock)
        await semaphore.acquire()
        return () => semaphore.release()
      },
      async tryAcquire(key) {
        const semaphore = new Semaphore(client, key, options.permits, lock)
        return (await semaphore.tryAcquire()) ? () => semaphore.release() : null
      },
      close: () => closeRedis(client),
    }
  },
}

/** redis-semaphore's RedlockMutex over every node of a redlock:// URL: a new RedlockMutex per acquisition. No auto-refresh. */
export const redisSemaphoreRedlock: PeerDef = {
  id: 'redis-semaphore-redlock',
  store: 'redis',
  label: (profile) => `redis-semaphore RedlockMutex (${profileLabel(profile)})`,
  async create(options) {
    const clients = await openNodes(options.url)
    const lock = lockOptions(options)
    return {
      label: redisSemaphoreRedlock.label(options.profile),
      async acquire(key) {
        const mutex = new RedlockMutex(clients, key, lock)
        await mutex.acquire()
        return () => mutex.release()
      },
      async tryAcquire(key) {
        const mutex = new RedlockMutex(clients, key, lock)
        return (await mutex.tryAcquire()) ? () => mutex.release() : null
      },
      close: () => closeNodes(clients),
    }
  },
}

import { Mutex } from 'async-mutex'
import type { PeerDef } from './types.js'

/** In-process reference for the memory store: one async-mutex Mutex per key. */
export const asyncMutex: PeerDef = {
  id: 'async-mutex',
  store: 'memory',
  label: () => 'async-mutex',
  async create() {
    const mutexes = new Map<string, Mutex>()
    const mutexOf = (key: string): Mutex => {
      let mutex = mutexes.get(key)
      if (!mutex) {
        mutex = new Mutex()
        mutexes.set(key, mutex)
      }
      return mutex
    }
    return {
      label: asyncMutex.label('default'),
      async acquire(key) {
        const release = await mutexOf(key).acquire()
        return async () => release()
      },
      async close() {},
    }
  },
}

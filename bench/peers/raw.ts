import { compareAndDelete, loadCompareAndDelete } from '../raw-redis.js'
import { nextValue } from '../util.js'
import { pollingContender } from './polling.js'
import { closeRedis, openRedis } from './redis-client.js'
import type { Contender, PeerDef, Release } from './types.js'

/**
 * The baseline: SET key value NX PX ttl, released by a plain EVALSHA
 * compare-and-delete (bench/raw-redis.ts). Waiting, it tries again every
 * 1 ms ('default') or at once ('fast': the spin, the ceiling of hand-overs
 * any client-side waiting can reach).
 */
export const raw: PeerDef = {
  id: 'raw',
  store: 'redis',
  label: (profile) => `raw SET NX PX + EVALSHA del${profile === 'fast' ? ' (spin)' : ''}`,
  async create({ url, ttlMs, waitMs, profile }): Promise<Contender> {
    const client = await openRedis(url)
    await loadCompareAndDelete(client)
    const attempt = async (key: string): Promise<Release | null> => {
      const value = nextValue()
      const ok = await client.set(key, value, 'PX', ttlMs, 'NX')
      if (ok !== 'OK') return null
      return async () => {
        await compareAndDelete(client, key, value)
      }
    }
    return pollingContender(raw.label(profile), waitMs, attempt, () => closeRedis(client), profile === 'fast' ? 0 : 1)
  },
}

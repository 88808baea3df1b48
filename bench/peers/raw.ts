import type { Redis } from 'ioredis'
import { nextValue } from '../util.js'
import { pollingContender } from './polling.js'
import { closeRedis, openRedis } from './redis-client.js'
import type { Contender, PeerDef, Release } from './types.js'

/** Compare-and-delete, run with EVALSHA through ioredis' defineCommand. */
const COMPARE_AND_DELETE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`

type RawClient = Redis & { benchCompareAndDelete(key: string, value: string): Promise<number> }

/** The baseline: SET key value NX PX ttl, released by a Lua compare-and-delete. */
export const raw: PeerDef = {
  id: 'raw',
  store: 'redis',
  label: () => 'raw SET NX PX + Lua del',
  async create({ url, ttlMs, waitMs }): Promise<Contender> {
    const client = (await openRedis(url)) as RawClient
    client.defineCommand('benchCompareAndDelete', { numberOfKeys: 1, lua: COMPARE_AND_DELETE })
    const attempt = async (key: string): Promise<Release | null> => {
      const value = nextValue()
      const ok = await client.set(key, value, 'PX', ttlMs, 'NX')
      if (ok !== 'OK') return null
      return async () => {
        await client.benchCompareAndDelete(key, value)
      }
    }
    return pollingContender(raw.label('default'), waitMs, attempt, () => closeRedis(client))
  },
}

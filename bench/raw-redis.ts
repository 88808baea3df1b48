/**
 * The raw Redis lock every baseline uses, in its fastest honest form:
 * `SET key value NX PX ttl`, released by a plain EVALSHA of a
 * compare-and-delete loaded once up front (no ioredis defineCommand wrapper,
 * which costs client CPU per call).
 */
import { createHash } from 'node:crypto'
import type { Redis } from 'ioredis'

const COMPARE_AND_DELETE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`
const COMPARE_AND_DELETE_SHA = createHash('sha1').update(COMPARE_AND_DELETE).digest('hex')

/** Loads the compare-and-delete script on `client`'s server (once, before measuring). */
export async function loadCompareAndDelete(client: Redis): Promise<void> {
  await client.script('LOAD', COMPARE_AND_DELETE)
}

/**
 * Deletes `key` only while it still holds `value`; 1 when deleted. A NOSCRIPT
 * (a flushed script cache) falls back to EVAL, as any correct client must.
 */
export async function compareAndDelete(client: Redis, key: string, value: string): Promise<number> {
  try {
    return (await client.evalsha(COMPARE_AND_DELETE_SHA, 1, key, value)) as number
  } catch (error) {
    if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error
    return (await client.eval(COMPARE_AND_DELETE, 1, key, value)) as number
  }
}

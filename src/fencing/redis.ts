/**
 * Fencing for data kept in Redis: `set` and `del` that apply only with a
 * token not below the highest accepted for the key (fenced-write.lua).
 * Takes any client with ioredis' `evalsha`/`eval` shape, so the library
 * does not depend on a Redis client here.
 */
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { invalidArgument } from '../core/errors.js'
import { parseDuration, type Duration } from '../core/duration.js'
import { parseFencingToken, staleToken } from './fence.js'

/** An ioredis Redis or Cluster client (anything with their evalsha/eval shape). */
export interface RedisScriptClient {
  evalsha(sha: string, numKeys: number, ...args: string[]): Promise<unknown>
  eval(script: string, numKeys: number, ...args: string[]): Promise<unknown>
}

export interface RedisFenceOptions {
  /** How long a fence key outlives its last write. Default 1 day; it must outlive any paused holder. */
  fenceTtl?: Duration
}

export interface FencedSetOptions {
  /** Expiry of the data key. Default: none. */
  ttl?: Duration
}

const SCRIPT = readFileSync(new URL('./fenced-write.lua', import.meta.url), 'utf8')
const SHA = createHash('sha1').update(SCRIPT).digest('hex')
const DAY_MS = 86_400_000

/**
 * The fence key of a data key, in the data key's Cluster slot: the data key's
 * own hash tag when it has one, else the whole data key as the tag.
 */
export function fenceKeyOf(dataKey: string): string {
  if (typeof dataKey !== 'string' || dataKey.length === 0) throw invalidArgument('a fenced Redis key must be a non-empty string')
  const open = dataKey.indexOf('{')
  const close = open >= 0 ? dataKey.indexOf('}', open + 1) : -1
  if (open >= 0 && close > open + 1) return `baton-fence:${dataKey.slice(open, close + 1)}:${dataKey}`
  // No hash tag: the slot is the hash of the whole key, so tag the fence with it.
  // A lone '}' before any '{' would end that tag early: such keys need a tag of their own.
  if (dataKey.includes('}')) throw invalidArgument(`Redis key ${JSON.stringify(dataKey)} has a '}' but no hash tag; give it a {tag} so its fence can share its Cluster slot`)
  return `baton-fence:{${dataKey}}`
}

export class RedisFence {
  private readonly fenceTtlMs: number

  constructor(private readonly client: RedisScriptClient, options: RedisFenceOptions = {}) {
    this.fenceTtlMs = options.fenceTtl === undefined ? DAY_MS : parseDuration(options.fenceTtl, 'fenceTtl')
  }

  /** SET `key` to `value` if `token` is not below the highest accepted for `key`; else STALE_TOKEN. */
  async set(key: string, value: string, token: bigint | string | number, options: FencedSetOptions = {}): Promise<void> {
    const ttlMs = options.ttl === undefined ? 0 : parseDuration(options.ttl, 'ttl')
    if (typeof value !== 'string') throw invalidArgument('RedisFence.set takes a string value')
    await this.write(key, token, 'set', value, String(ttlMs))
  }

  /** DEL `key` if `token` is not below the highest accepted for it; else STALE_TOKEN. */
  async del(key: string, token: bigint | string | number): Promise<void> {
    await this.write(key, token, 'del', '', '0')
  }

  private async write(key: string, token: bigint | string | number, op: string, value: string, ttl: string): Promise<void> {
    const wanted = parseFencingToken(token)
    const args = [fenceKeyOf(key), key, wanted.toString(), op, value, ttl, String(this.fenceTtlMs)]
    let reply: unknown
    try {
      reply = await this.client.evalsha(SHA, 2, ...args)
    } catch (error) {
      if (!String((error as Error)?.message).startsWith('NOSCRIPT')) throw error
      reply = await this.client.eval(SCRIPT, 2, ...args)
    }
    const [written, highest] = reply as [number, string | undefined]
    if (written !== 1) throw staleToken(key, wanted, BigInt(highest ?? wanted))
  }
}

/**
 * A Redis driver driven directly (no core in between), on a redis-server of
 * its own, with a plain ioredis connection beside it to read and write the
 * keys: for the tests that check what the scripts leave in the store.
 */
import { Redis } from 'ioredis'
import type { AcquireRequest, Driver } from '../../src/core/driver.js'
import { parseStoreUrl } from '../../src/core/url.js'
import { createRedisDriver } from '../../src/drivers/redis/index.js'
import { startRedis, type RedisServer } from './servers.js'

export interface DriverOnRedis {
  readonly server: RedisServer
  readonly raw: Redis
  readonly driver: Driver
  close(): Promise<void>
}

export async function driverOnRedis(clientId: string): Promise<DriverOnRedis> {
  const server = await startRedis()
  const raw = new Redis(server.port, '127.0.0.1')
  const driver = await createRedisDriver(parseStoreUrl(server.url), {
    clientId, connectTimeoutMs: 5000, commandTimeoutMs: 5000, fenceTtlMs: 3_600_000,
  })
  return {
    server, raw, driver,
    async close() {
      await driver.close()
      raw.disconnect()
    },
  }
}

/** An exclusive, not fair, single attempt of `owner` on `name` for 10 s, with `more` on top. */
export function attemptOf(name: string, owner: string, more: Partial<AcquireRequest> = {}): AcquireRequest {
  return {
    name, kind: 'mutex', mode: 'exclusive', fair: false, permits: 1, lockDelayMs: 0,
    owner, ttlMs: 10_000, enqueue: false, queueTtlMs: 0, retry: false, ...more,
  }
}

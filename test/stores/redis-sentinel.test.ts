/**
 * The conformance suite through Redis Sentinel (master + replica + 2 sentinels).
 * No freezing here: a frozen master would be failed over, which is a test of
 * its own (see redis.faults.test.ts), not of the lock properties.
 */
import { runConformance } from '../conformance/index.js'
import { startRedisSentinel } from '../harness/servers.js'

runConformance('redis+sentinel://', async () => {
  const sentinel = await startRedisSentinel()
  return { url: sentinel.url, crossProcess: true, close: () => sentinel.stop() }
})

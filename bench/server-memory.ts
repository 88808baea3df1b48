/**
 * Child process of the server benchmark (run with --expose-gc): a lock
 * server in this process on its embedded store, N locks acquired through
 * fastify's inject (no sockets, so no socket buffers counted), heap measured
 * after a full GC before and after. Prints "bytes <per lock>".
 */
import { Baton } from '../src/baton.js'
import { newClientId } from '../src/core/owner.js'
import { createPrivateMemoryDriver } from '../src/drivers/memory/index.js'
import { createLockServer } from '../src/server/index.js'
import { DEFAULT_TENANT_QUOTAS } from '../src/server/limits.js'

const count = Number(process.argv[2] ?? 100_000)
const gc = (globalThis as { gc?: () => void }).gc
if (!gc) throw new Error('run with --expose-gc')
// Every lock is held by one tenant here: its quota of holds (100k by default) is lifted.
const server = await createLockServer({ baton: new Baton(createPrivateMemoryDriver(), newClientId()), privateStore: true, quotas: { ...DEFAULT_TENANT_QUOTAS, holds: Infinity } })
const acquire = (name: string) => server.app.inject({ method: 'POST', url: `/v1/locks/${encodeURIComponent(name)}/acquire`, payload: { ttl: '5m' } })
for (let i = 0; i < 1000; i++) await acquire(`warm/${i}`) // JIT, metric label sets, pools
gc()
const before = process.memoryUsage().heapUsed
for (let i = 0; i < count; i++) {
  const answer = await acquire(`held/${i}`)
  if (answer.statusCode !== 200) throw new Error(`acquire answered ${answer.statusCode}`)
}
gc()
const after = process.memoryUsage().heapUsed
console.log(`bytes ${((after - before) / count).toFixed(0)}`)
process.exit(0)

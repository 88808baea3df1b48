/**
 * The lock-server chaos stores: `baton serve` on its memory store with a
 * data directory (`http-memory`), or on Redis (`http-redis`), each killed
 * (-9) and started again.
 */
import { readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { startBatonServer, tempDir, type BatonServer } from '../../harness/baton-server.js'
import { startRedis } from '../../harness/servers.js'
import { ms } from '../../harness/timing.js'
import type { ChaosStore } from '../store.js'

/** ms until the server's /readyz says it grants again (after a restart it may wait out its previous run's leases). */
async function readyAfter(server: BatonServer): Promise<number> {
  const started = Date.now()
  for (;;) {
    const ok = await fetch(`${server.base}/readyz`, { signal: AbortSignal.timeout(ms(5000)) }).then((r) => r.ok, () => false)
    if (ok || Date.now() - started > ms(60_000)) return Date.now() - started
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

export async function startHttpMemoryStore(): Promise<ChaosStore> {
  const dataDir = tempDir('chaos-data')
  const server = await startBatonServer(['--data-dir', dataDir])
  return { kind: 'http-memory', url: server.base, proxyPorts: [server.port],
    close: async () => { await server.stop(); rmSync(dataDir, { recursive: true, force: true }) },
    faults: {
      // The data directory kept: the holds are forgotten with the process,
      // but no grant is made before every lease it marked there could have
      // ended, and tokens continue above the old ones. No exception.
      'store-restart': async () => {
        await server.restart()
        return `baton serve (memory, --data-dir) killed (-9) and started again on its data directory: grants resumed after ${await readyAfter(server)} ms`
      },
      // As a server started without --data-dir and told --no-restart-wait
      // (nothing of an earlier run can be held): it forgets every hold and
      // starts its token counters again. A known exception.
      'store-restart-wiped': async () => {
        await server.kill()
        for (const entry of readdirSync(dataDir)) rmSync(join(dataDir, entry), { recursive: true, force: true })
        await server.restart()
        return 'baton serve (memory) killed (-9) and started again with its data directory emptied: holds and tokens forgotten'
      },
    } }
}

export async function startHttpRedisStore(): Promise<ChaosStore> {
  const redis = await startRedis()
  const server = await startBatonServer(['--store', redis.url])
  return { kind: 'http-redis', url: server.base, proxyPorts: [server.port],
    close: async () => { await server.stop(); await redis.stop() },
    faults: { 'store-restart': async () => { await server.restart(); return 'baton serve (on Redis) killed (-9) and started again: the holds stay in Redis' } } }
}

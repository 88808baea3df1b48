/**
 * The stores the chaos runner can start (on free loopback ports, through
 * the test harness), with the store-specific faults each offers.
 */
import { startMariadb } from '../harness/mariadb.js'
import { startPostgres } from '../harness/postgres.js'
import { startRedlock } from '../harness/redlock.js'
import { redisCommand, startRedis, startRedisSentinel } from '../harness/servers.js'
import { ms } from '../harness/timing.js'
import { startEtcdClusterStore, startEtcdStore } from './faults/etcd.js'
import { startHttpMemoryStore, startHttpRedisStore } from './faults/http.js'
import { startClusterStore } from './faults/redis-cluster.js'
import { startZookeeperEnsembleStore, startZookeeperStore } from './faults/zookeeper.js'
import type { ChaosStore, StoreKind } from './store.js'

export { STORE_KINDS, type ChaosStore, type RunView, type StoreFault, type StoreKind } from './store.js'
import { historyNow } from '../../src/chaos/history.js'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export async function startStore(kind: StoreKind): Promise<ChaosStore> {
  switch (kind) {
    case 'redis': {
      const server = await startRedis()
      return { kind, url: server.url, proxyPorts: [server.port], close: () => server.stop(),
        faults: { 'store-restart': async (random) => {
          // It hangs first (calls pile up unanswered), then dies and stays down for up to 4 s, past a
          // command's deadline (2 s in the chaos clients): the calls it never answered fail while ioredis reconnects.
          const [hungMs, downMs] = [random.int(0, 1000), random.int(0, 4000)]
          server.pause()
          await sleep(hungMs)
          await server.kill()
          await sleep(downMs)
          const at = historyNow()
          await server.restart()
          return { detail: `redis-server hung ${hungMs} ms, killed (-9), down ${downMs} ms, started again, empty`, emptied: { at } }
        } } }
    }
    case 'redis-cluster': return startClusterStore()
    case 'redis-sentinel': {
      const sentinel = await startRedisSentinel()
      return { kind, url: sentinel.url, proxyPorts: [], close: () => sentinel.stop(),
        faults: { failover: async () => {
          const port = sentinel.sentinels[0]!.port
          const master = async () => String(await redisCommand(port, ['SENTINEL', 'get-master-addr-by-name', 'mymaster']).catch(() => ''))
          const before = await master()
          const oldPort = Number(/(\d+)\s*$/.exec(before.replace(/,/g, ' '))?.[1])
          const reply = await redisCommand(port, ['SENTINEL', 'FAILOVER', 'mymaster'])
          // Healed once the sentinel names another master AND the old one is a
          // replica: until then clients still connected to the old master can
          // be granted holds the new one never sees. The exception's window
          // counts from there.
          const role = async () => String(await redisCommand(oldPort, ['ROLE']).then((r) => (Array.isArray(r) ? r[0] : r), () => ''))
          const until = Date.now() + ms(15_000)
          while (Date.now() < until && ((await master()) === before || (await role()) === 'master')) await new Promise((resolve) => setTimeout(resolve, 100))
          return `SENTINEL FAILOVER mymaster: ${String(reply)}; master ${before} → ${await master()}; the old master is a ${await role()}`
        } } }
    }
    case 'redlock': {
      const setup = await startRedlock(3)
      return { kind, url: setup.url, proxyPorts: setup.nodes.map((n) => n.port), close: () => setup.stop(),
        faults: { 'store-restart': async (random) => {
          const node = random.pick(setup.nodes)
          await node.restart()
          return `node :${node.port} of 3 killed (-9) and started again, empty`
        } } }
    }
    case 'postgres': {
      const server = await startPostgres()
      return { kind, url: server.url, proxyPorts: [server.port], close: () => server.stop(),
        faults: {
          'store-restart': async () => { await server.restart(); return 'postgres killed (-9) and started again' },
          'backend-kill': async () => {
            const [row] = await server.query<{ n: string }>(
              "SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()")
            return `pg_terminate_backend() of ${row?.n ?? 0} client backends (every client connection, listeners included)`
          },
        } }
    }
    case 'mysql': {
      const server = await startMariadb()
      return { kind, url: server.url, proxyPorts: [server.port], close: () => server.stop(),
        faults: {
          'store-restart': async () => { await server.restart(); return 'mariadb killed (-9) and started again' },
          'backend-kill': async () => {
            const rows = await server.query<{ id: number }>("SELECT id FROM information_schema.processlist WHERE user = 'baton'")
            let killed = 0
            for (const { id } of rows) killed += await server.query(`KILL CONNECTION ${Number(id)}`).then(() => 1, () => 0)
            return `KILL CONNECTION of ${killed} of ${rows.length} client connections (waiters' doorbell connections included)`
          },
        } }
    }
    case 'etcd': return startEtcdStore()
    case 'etcd-cluster': return startEtcdClusterStore()
    case 'zookeeper': return startZookeeperStore()
    case 'zookeeper-ensemble': return startZookeeperEnsembleStore()
    case 'http-memory': return startHttpMemoryStore()
    case 'http-redis': return startHttpRedisStore()
  }
}

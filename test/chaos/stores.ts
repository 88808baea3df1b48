/**
 * The stores the chaos runner can start (on free loopback ports, through
 * the test harness), with the store-specific faults each offers.
 */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { startBatonServer } from '../harness/baton-server.js'
import { startEtcd } from '../harness/etcd.js'
import { startMariadb } from '../harness/mariadb.js'
import { startPostgres } from '../harness/postgres.js'
import { startRedlock } from '../harness/redlock.js'
import { clusterSlotOwner, moveClusterSlot, redisCommand, startRedis, startRedisCluster, startRedisSentinel } from '../harness/servers.js'
import { ms } from '../harness/timing.js'
import { historyNow } from '../../src/chaos/history.js'
import type { Random } from '../../src/chaos/prng.js'
import { slotOfName } from '../../src/drivers/redis/keys.js'
import { startZookeeper } from '../harness/zookeeper.js'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export const STORE_KINDS = ['redis', 'redis-cluster', 'redis-sentinel', 'redlock', 'postgres', 'mysql', 'etcd', 'zookeeper', 'http-memory', 'http-redis'] as const
export type StoreKind = (typeof STORE_KINDS)[number]

export interface ChaosStore {
  readonly kind: StoreKind
  readonly url: string
  /** The ports of `url`'s servers, for proxies; empty when clients can not be proxied (they follow the addresses the servers announce). */
  readonly proxyPorts: readonly number[]
  /**
   * Faults of this store beside the generic ones: name → make it (resolves
   * when healed, with what it did). `random` is the nemesis's seeded draw
   * (a seed replays the same faults on the same targets); `names`, the lock
   * names the run's clients use.
   */
  readonly faults: Readonly<Record<string, StoreFault>>
  close(): Promise<void>
}

export type StoreFault = (random: Random, names: readonly string[]) => Promise<string | StoreFaultDone>

/** What a store fault did; `emptied` when it left the store (or the part keeping `names`) empty from `at` on. */
export interface StoreFaultDone {
  readonly detail: string
  readonly emptied?: { readonly at: number; readonly names?: readonly string[] }
}

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
    case 'redis-cluster': {
      const cluster = await startRedisCluster(3)
      return { kind, url: cluster.url, proxyPorts: [], close: () => cluster.stop(),
        faults: {
          'store-restart': async (random, names) => {
            const node = random.pick(cluster.nodes)
            const kept = await Promise.all(names.map(async (name) => (await clusterSlotOwner(cluster, slotOfName(name))) === node))
            await node.kill()
            const at = historyNow()
            await node.restart()
            return { detail: `master :${node.port} killed (-9) and started again, empty`, emptied: { at, names: names.filter((_, i) => kept[i]) } }
          },
          // Cluster clients are not proxied: the notice connections are cut from the servers' side.
          'notice-kill': async () => {
            const killed = await Promise.all(cluster.nodes.map((n) => redisCommand(n.port, ['CLIENT', 'KILL', 'TYPE', 'pubsub']).catch(() => 0)))
            return `CLIENT KILL TYPE pubsub on every master: ${killed.map(Number).reduce((a, b) => a + b, 0)} notice connections cut`
          },
          // A live resharding of the slot one of the run's names lives in, while its clients hold, wait and renew.
          'slot-move': async (random, names) => {
            const name = random.pick(names)
            const slot = slotOfName(name)
            const from = await clusterSlotOwner(cluster, slot)
            const to = random.pick(cluster.nodes.filter((n) => n !== from))
            await moveClusterSlot(cluster, slot, to)
            return `slot ${slot} ("${name}") moved from :${from.port} to :${to.port}`
          },
        } }
    }
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
    case 'etcd': {
      const etcd = await startEtcd()
      const member = etcd.members[0]!
      const etcdctl = (...args: string[]) => promisify(execFile)('etcdctl', ['--endpoints', `http://127.0.0.1:${member.port}`, ...args], { env: { ...process.env, ETCDCTL_API: '3' } })
      return { kind, url: etcd.url, proxyPorts: [member.port], close: () => etcd.stop(),
        faults: {
          'store-restart': async () => { await member.restart(); return 'etcd killed (-9) and started again' },
          // Watches older than the compacted revision are cancelled: the driver must watch again from now and re-read.
          compaction: async () => {
            const status = JSON.parse((await etcdctl('endpoint', 'status', '--write-out=json')).stdout) as { Status: { header: { revision: number } } }[]
            const revision = status[0]!.Status.header.revision
            await etcdctl('compaction', String(revision))
            return `compacted to revision ${revision} (every older revision gone, watches behind it cancelled)`
          },
        } }
    }
    case 'zookeeper': {
      const zk = await startZookeeper()
      const server = zk.servers[0]!
      return { kind, url: `zk://${zk.hosts}/chaos`, proxyPorts: [server.port], close: () => zk.stop(),
        faults: { 'store-restart': async () => { await server.restart(); return 'zookeeper killed (-9) and started again' } } }
    }
    case 'http-memory': {
      const server = await startBatonServer()
      return { kind, url: server.base, proxyPorts: [server.port], close: () => server.stop(),
        faults: { 'store-restart': async () => { await server.restart(); return 'baton serve (memory) killed and started again: holds and tokens forgotten' } } }
    }
    case 'http-redis': {
      const redis = await startRedis()
      const server = await startBatonServer(['--store', redis.url])
      return { kind, url: server.base, proxyPorts: [server.port],
        close: async () => { await server.stop(); await redis.stop() },
        faults: { 'store-restart': async () => { await server.restart(); return 'baton serve (on Redis) killed and started again' } } }
    }
  }
}

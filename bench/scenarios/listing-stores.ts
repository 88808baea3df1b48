/**
 * The stores of the listing scenario: each gives baton's URL and a fast way
 * to leave idle names in the store, in the driver's own layout, as releases
 * leave them. Idle names are `done/<i>`: they sort before every held name
 * (`held/<i>`), the worst case for a scan in name order.
 */
import { Etcd3 } from 'etcd3'
import zookeeper, { type Client } from 'node-zookeeper-client'
import mysql from 'mysql2/promise'
import pg from 'pg'
import { Cluster } from 'ioredis'
import { startRedisCluster } from '../../test/harness/servers.js'
import { closeRedis, openRedis } from '../peers/redis-client.js'
import type { BenchContext } from '../types.js'
import { storeUrl } from './consensus.js'

/** What the listing scenario needs of a store. */
export interface ListingStore {
  readonly label: string
  readonly url: string
  /** Numbers of idle names to measure at, ascending. */
  readonly idleCounts: readonly number[]
  /** What an idle name is on this store, and why these counts. */
  readonly idleNote: string
  /** The held names' ttl, renewed while measured (default 10 min, not renewed). */
  readonly ttl?: string
  /** Adds idle names until `total` exist. */
  seedIdle(total: number): Promise<void>
  close(): Promise<void>
}

export type ListingStoreId = 'redis' | 'redis-cluster' | 'postgres' | 'mysql' | 'etcd' | 'etcd-compacted' | 'zookeeper'

export const IDLE_PREFIX = 'done/'

/** Calls `write(from, to)` over [from, to) in chunks of `size`. */
async function inChunks(from: number, to: number, size: number, write: (from: number, to: number) => Promise<unknown>): Promise<void> {
  for (let at = from; at < to; at += size) await write(at, Math.min(to, at + size))
}

/** The hold key keeping only the counter ("<counter>|-") for fenceTtl; a Lua loop, 10,000 a call. */
async function redisStore(ctx: BenchContext, tag: string): Promise<ListingStore> {
  const admin = await openRedis(ctx.redisUrl)
  const idleKeys = (command: string) => `for i = tonumber(ARGV[2]), tonumber(ARGV[3]) do
    redis.call('${command}', ARGV[1] .. ':{${IDLE_PREFIX}' .. i .. '}:x'${command === 'SET' ? ", '1700000000000000|-', 'PX', 3600000" : ''})
  end`
  const keys = (from: number, to: number, command: string) =>
    inChunks(from, to, 10_000, (at, end) => admin.eval(idleKeys(command), 0, tag, at, end - 1))
  let seeded = 0
  return {
    label: 'Redis',
    url: `${ctx.redisUrl}?prefix=${tag}`,
    idleCounts: ctx.pick([250_000, 1_000_000], [20_000]),
    idleNote: 'a hold key keeping the counter for fenceTtl',
    async seedIdle(total) {
      await keys(seeded, total, 'SET')
      seeded = Math.max(seeded, total)
    },
    async close() {
      await keys(0, seeded, 'UNLINK')
      await closeRedis(admin)
    },
  }
}

/**
 * A Redis Cluster of 3 masters of its own, started for this store: the same
 * idle hold keys as redisStore, spread over every slot by their names, so
 * written through a cluster client (auto-pipelined per master, 10,000 at a
 * time) rather than by one script.
 */
async function redisClusterStore(ctx: BenchContext, tag: string): Promise<ListingStore> {
  const cluster = await startRedisCluster(3)
  const admin = new Cluster(cluster.nodes.map((node) => ({ host: '127.0.0.1', port: node.port })), { enableAutoPipelining: true })
  admin.on('error', () => {})
  const keys = (from: number, to: number, write: (key: string) => Promise<unknown>) =>
    inChunks(from, to, 10_000, (at, end) => Promise.all(Array.from({ length: end - at }, (_, i) => write(`${tag}:{${IDLE_PREFIX}${at + i}}:x`))))
  let seeded = 0
  return {
    label: 'Redis Cluster (3 masters)',
    url: `${cluster.url}?prefix=${tag}`,
    idleCounts: ctx.pick([250_000, 1_000_000], [20_000]),
    idleNote: 'a hold key keeping the counter for fenceTtl, in its own slot',
    async seedIdle(total) {
      await keys(seeded, total, (key) => admin.set(key, '1700000000000000|-', 'PX', 3600000))
      seeded = Math.max(seeded, total)
    },
    async close() {
      admin.disconnect()
      await cluster.stop()
    },
  }
}

/** A row of `names` (kind, counter, touched now) with no hold and no line entry, as a release leaves it; one INSERT … SELECT per 50,000. */
async function postgresStore(ctx: BenchContext, tag: string): Promise<ListingStore> {
  const base = await ctx.postgresUrl()
  const admin = new pg.Client({ connectionString: base })
  await admin.connect()
  let seeded = 0
  return {
    label: 'PostgreSQL',
    url: `${base}${base.includes('?') ? '&' : '?'}schema=${tag}`,
    idleCounts: ctx.pick([250_000, 1_000_000], [20_000]),
    idleNote: 'a row of the names table (the fencing counter) kept for fenceTtl',
    async seedIdle(total) {
      await inChunks(seeded, total, 50_000, (at, end) => admin.query(
        `INSERT INTO "${tag}".names (name, kind, fair, permits, last_token, touched_at)
         SELECT '${IDLE_PREFIX}' || i, 'mutex', false, 1, 1700000000000000 + i, clock_timestamp() FROM generate_series($1::int, $2::int) i`,
        [at, end - 1]))
      seeded = Math.max(seeded, total)
      await admin.query(`VACUUM ANALYZE "${tag}".names`)
    },
    async close() {
      await admin.query(`DROP SCHEMA IF EXISTS "${tag}" CASCADE`)
      await admin.end()
    },
  }
}

/**
 * A row of baton_names (kind, counter, touched now) with no hold and no line
 * entry, as a release leaves it; one INSERT … SELECT per 50,000 (a recursive
 * count, allowed that deep for this session). The bench's MariaDB is its own
 * and baton's tables have no prefix: the idle rows are deleted on close.
 */
async function mysqlStore(ctx: BenchContext): Promise<ListingStore> {
  const url = await ctx.mysqlUrl()
  const admin = await mysql.createConnection({ uri: url.replace(/^mariadb:/, 'mysql:') })
  await admin.query('SET SESSION max_recursive_iterations = 50000')
  let seeded = 0
  return {
    label: 'MySQL (MariaDB)',
    url,
    idleCounts: ctx.pick([250_000, 1_000_000], [20_000]),
    idleNote: 'a row of baton_names (the fencing counter) kept for fenceTtl',
    async seedIdle(total) {
      await inChunks(seeded, total, 50_000, (at, end) => admin.query(
        `INSERT INTO baton_names (name, kind, fair, permits, last_token, touched_at)
         WITH RECURSIVE n(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM n WHERE i < ?)
         SELECT CONCAT('${IDLE_PREFIX}', i), 'mutex', false, 1, 1700000000000000 + i, CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED) FROM n`,
        [at, end - 1]))
      seeded = Math.max(seeded, total)
      await admin.query('ANALYZE TABLE baton_names')
    },
    async close() {
      await admin.query(`DELETE FROM baton_names WHERE name LIKE '${IDLE_PREFIX}%'`)
      await admin.end()
    },
  }
}

/**
 * A released name leaves no live key on etcd (the token is the create
 * revision, global): what stays is its deleted keys in etcd's history until
 * a compaction. Keys `<prefix>done/<i>/<lease hex>.<id>` written 128 a
 * transaction, then deleted by one range delete.
 */
async function etcdStore(ctx: BenchContext, tag: string, compacted = false): Promise<ListingStore> {
  const url = await storeUrl('etcd')
  const prefix = `${tag}/`
  const client = new Etcd3({ hosts: url.replace(/^etcd:\/\//, '').split(',').map((h) => `http://${h}`) })
  let seeded = 0
  return {
    label: compacted ? 'etcd, compacted' : 'etcd',
    url: `${url}?prefix=${prefix}`,
    // Not 1,000,000: etcd timed out seeding it on this (shared, loaded) machine.
    idleCounts: ctx.pick([100_000, 250_000], [20_000]),
    idleNote: compacted ? 'the same, after a compaction (nothing left)' : 'deleted keys kept in etcd\'s history (no compaction)',
    async seedIdle(total) {
      const value = Buffer.from('m|e|1|1|f|x.y')
      await inChunks(seeded, total, 1_280, (at, end) => Promise.all(Array.from({ length: Math.ceil((end - at) / 128) }, (_, k) => {
        const from = at + k * 128
        const request_put = (i: number) => ({ key: Buffer.from(`${prefix}${IDLE_PREFIX}${i}/694d1b2c3d4e5f60.1`), value })
        return client.kv.txn({ success: Array.from({ length: Math.min(128, end - from) }, (_, j) => ({ request_put: request_put(from + j) })) })
      })))
      const start = `${prefix}${IDLE_PREFIX}`
      const deleted = await client.kv.deleteRange({ key: Buffer.from(start), range_end: Buffer.from(start.slice(0, -1) + String.fromCharCode(start.charCodeAt(start.length - 1) + 1)) })
      // What an operator's --auto-compaction-retention does some time later: deleted keys leave the index.
      if (compacted) await client.kv.compact({ revision: deleted.header.revision, physical: true })
      seeded = Math.max(seeded, total)
    },
    async close() {
      client.close()
    },
  }
}

/**
 * An empty parent node under /baton: what a name leaves for 10 s after its
 * client's last entry left, and for good when that client crashed. Created
 * 1,000 a multi request, under a chroot of its own. At most 100,000: every
 * empty parent before the page costs list() one read.
 */
async function zookeeperStore(ctx: BenchContext, tag: string): Promise<ListingStore> {
  const url = await storeUrl('zookeeper')
  const client: Client = zookeeper.createClient(url.replace(/^zk:\/\//, ''))
  await new Promise<void>((resolve) => {
    client.once('connected', () => resolve())
    client.connect()
  })
  const root = `/${tag}/baton`
  await new Promise<void>((resolve, reject) => client.mkdirp(root, (e) => (e ? reject(e) : resolve())))
  let seeded = 0
  return {
    label: 'ZooKeeper',
    url: `${url}/${tag}`,
    idleCounts: ctx.pick([25_000, 100_000], [20_000]),
    // Within the test server's maxSessionTimeout (60 s).
    ttl: '50s',
    idleNote: 'an empty parent node (a name whose client crashed, or released less than 10 s ago); '
      + 'fewer: each costs list() one read, and ZooKeeper keeps every node in its JVM heap (256 MB here)',
    async seedIdle(total) {
      await inChunks(seeded, total, 20_000, (at, end) => Promise.all(Array.from({ length: Math.ceil((end - at) / 1000) }, (_, k) => {
        const transaction = client.transaction()
        for (let i = at + k * 1000; i < Math.min(end, at + (k + 1) * 1000); i++) {
          transaction.create(`${root}/${encodeURIComponent(`${IDLE_PREFIX}${i}`)}`, zookeeper.CreateMode.PERSISTENT)
        }
        return new Promise<void>((resolve, reject) => transaction.commit((e) => (e ? reject(e) : resolve())))
      })))
      seeded = Math.max(seeded, total)
    },
    async close() {
      client.close()
    },
  }
}

export const LISTING_STORES: Record<ListingStoreId, (ctx: BenchContext, tag: string) => Promise<ListingStore>> = {
  redis: redisStore, 'redis-cluster': redisClusterStore, postgres: postgresStore, mysql: (ctx) => mysqlStore(ctx), etcd: etcdStore, 'etcd-compacted': (ctx, tag) => etcdStore(ctx, `${tag}c`, true), zookeeper: zookeeperStore,
}

/**
 * Listing on Redis Cluster: a page is read by one list-slots.lua call per
 * master (its slots' indexes merged there, first names in byte order), and
 * slot by slot where a master refuses the script or a slot moved. Every
 * path must give the same pages: the names of every slot, in byte order
 * (not the server's collation: "B" before "a"), cut exactly at the cursor.
 */
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import { connect, type Baton, type Lease } from '../../src/index.js'
import { slotOfName } from '../../src/drivers/redis/keys.js'
import {
  clusterSlotOwner, moveClusterSlot, startRedisCluster, stopAll, type RedisClusterSetup,
} from '../harness/servers.js'

after(() => stopAll())

const byBytes = (x: string, y: string): number => Buffer.compare(Buffer.from(x), Buffer.from(y))

/** Names over many slots (so on every master), cased so that a collation order would differ from byte order. */
function spreadNames(prefix: string): string[] {
  const names: string[] = []
  for (let i = 0; i < 150; i++) names.push(`${prefix}${i % 3 === 0 ? 'B' : i % 3 === 1 ? 'a' : 'Z'}${i}`)
  return [...names, `${prefix}é`, `${prefix}\u{1f600}`, `${prefix}a b`, `${prefix}a-b`, `${prefix}_`]
}

/** Every page of `limit` under `prefix`, walked by cursor. */
async function walk(client: Baton, prefix: string, limit: number): Promise<string[]> {
  const walked: string[] = []
  for (let after: string | undefined; ;) {
    const page = await client.list({ prefix, limit, ...(after === undefined ? {} : { after }) })
    assert.ok(page.length <= limit)
    walked.push(...page.map((v) => v.name))
    if (page.length < limit) return walked
    after = page.at(-1)!.name
  }
}

async function withHeld(body: (cluster: RedisClusterSetup, client: Baton, names: string[]) => Promise<void>): Promise<void> {
  const cluster = await startRedisCluster(3)
  const client = await connect(cluster.url)
  const leases: Lease[] = []
  try {
    const names = spreadNames('ls/')
    leases.push(...await Promise.all(names.map((n) => client.mutex(n, { ttl: '2m' }).acquire())))
    await body(cluster, client, names.sort(byBytes))
  } finally {
    await Promise.allSettled(leases.map((l) => l.release()))
    await client.close()
    await cluster.stop()
  }
}

describe('redis cluster: listing', () => {
  it('pages merge every master\'s slots in byte order, one script call per master and page', async () => {
    await withHeld(async (cluster, client, names) => {
      const slots = new Set(names.map((n) => slotOfName(n)))
      assert.ok(slots.size > 100, 'the names are spread over many slots')
      // What the client sends for one page: list-slots.lua by evalsha to each master, no pipeline of ZRANGEBYLEX.
      const proto = Redis.prototype as unknown as Record<'evalsha' | 'pipeline', (...args: unknown[]) => unknown>
      const original = { evalsha: proto.evalsha, pipeline: proto.pipeline }
      const scripted: number[] = []
      let pipelines = 0
      proto.evalsha = function (this: Redis, ...args: unknown[]) {
        scripted.push(this.options.port!)
        return original.evalsha.apply(this, args)
      }
      proto.pipeline = function (this: Redis, ...args: unknown[]) {
        pipelines++
        return original.pipeline.apply(this, args)
      }
      let first
      try {
        first = await client.list({ prefix: 'ls/', limit: 10 })
      } finally {
        Object.assign(proto, original)
      }
      assert.deepEqual(first.map((v) => v.name), names.slice(0, 10))
      assert.deepEqual(scripted.sort(), cluster.nodes.map((n) => n.port).sort(), 'one script call per master')
      assert.equal(pipelines, 0, 'no slot read one by one')
      for (const limit of [2, 7, 50]) assert.deepEqual(await walk(client, 'ls/', limit), names, `pages of ${limit}`)
      assert.deepEqual((await client.list({ prefix: 'ls/' })).map((v) => v.name), names)
      assert.deepEqual((await client.list({ prefix: 'ls/', after: 'ls/_', limit: 3 })).map((v) => v.name),
        names.filter((n) => byBytes(n, 'ls/_') > 0).slice(0, 3))
    })
  })

  it('a master that refuses the script (Redis < 7) is read slot by slot, and the pages stay the same', async () => {
    await withHeld(async (cluster, client, names) => {
      // What Redis 6 answers to the shebang, on one master; the driver's other scripts (sendCommand) are not touched.
      const refusing = cluster.nodes[0]!.port
      const proto = Redis.prototype as unknown as Record<'eval' | 'evalsha', (...args: unknown[]) => Promise<unknown>>
      const original = { eval: proto.eval, evalsha: proto.evalsha }
      let refused = 0
      for (const command of ['eval', 'evalsha'] as const) {
        proto[command] = function (this: Redis, ...args: unknown[]) {
          if (this.options.port !== refusing) return original[command].apply(this, args)
          refused++
          return Promise.reject(new Error("ERR Error compiling script (new function): user_script:1: unexpected symbol near '#'"))
        }
      }
      try {
        for (const limit of [7, 50]) assert.deepEqual(await walk(client, 'ls/', limit), names, `pages of ${limit}`)
        assert.deepEqual((await client.list({ prefix: 'ls/' })).map((v) => v.name), names)
      } finally {
        Object.assign(proto, original)
      }
      assert.equal(refused, 1, 'a refusal for good is remembered: the script is not sent to that master again')
    })
  })

  it('a slot moved behind the client\'s map, or moving, is still read', async () => {
    await withHeld(async (cluster, client, names) => {
      const moved = names[3]!
      const slot = slotOfName(moved)
      const from = await clusterSlotOwner(cluster, slot)
      const to = cluster.nodes.find((n) => n !== from)!
      // Started while the slot's keys are on the importing node, its owner not changed yet: the index
      // is read there (ASK); the page's inspects of that slot's names wait for the move's end (TRYAGAIN).
      let during: Promise<string[]> | undefined
      await moveClusterSlot(cluster, slot, to, {
        whileMoving: () => {
          during = walk(client, 'ls/', 50)
          during.catch(() => {}) // awaited below
        },
      })
      assert.deepEqual(await during, names, 'pages started while the slot\'s keys were on the importing node')
      // The client's map still names the old owner: its script fails there and the slot is followed.
      assert.deepEqual(await walk(client, 'ls/', 7), names, 'pages after the move')
      assert.deepEqual((await client.list({ prefix: 'ls/' })).map((v) => v.name), names)
    })
  })
})

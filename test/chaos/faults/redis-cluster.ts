/**
 * The redis-cluster chaos store: three masters, one replica each, and its
 * faults: a master restarted empty, the notice connections cut, a live slot
 * migration, and a master failover (the master killed, its replica
 * promoted by the cluster itself, the old one back as a replica), and that
 * failover while a slot of the master is migrating.
 */
import {
  assignSlot, clusterSlotOwner, migrateSlotKeys, moveClusterSlot, openSlotMigration, redisCommand, startRedisCluster, type RedisClusterSetup, type RedisServer,
} from '../../harness/servers.js'
import { ms } from '../../harness/timing.js'
import { slotOfName } from '../../../src/drivers/redis/keys.js'
import { historyNow } from '../../../src/chaos/history.js'
import { Random } from '../../../src/chaos/prng.js'
import type { ChaosStore } from '../store.js'

const sleep = (delay: number) => new Promise((resolve) => setTimeout(resolve, delay))

async function roleOf(node: RedisServer): Promise<string> {
  const reply = await redisCommand(node.port, ['ROLE'], ms(2000)).catch(() => undefined)
  return Array.isArray(reply) ? String(reply[0]) : 'down'
}

/** The nodes that are masters now (roles change with every failover). */
async function mastersOf(cluster: RedisClusterSetup): Promise<RedisServer[]> {
  const roles = await Promise.all(cluster.nodes.map(roleOf))
  return cluster.nodes.filter((_, i) => roles[i] === 'master')
}

/** The replicas `master` itself lists (ROLE: [master, offset, [[host, port, offset], …]]). */
async function replicasOf(cluster: RedisClusterSetup, master: RedisServer): Promise<RedisServer[]> {
  const reply = await redisCommand(master.port, ['ROLE'])
  const listed = Array.isArray(reply) && Array.isArray(reply[2]) ? (reply[2] as string[][]).map((r) => Number(r[1])) : []
  return cluster.nodes.filter((n) => listed.includes(n.port))
}

async function clusterOk(nodes: readonly RedisServer[]): Promise<boolean> {
  for (const node of nodes) {
    const info = await redisCommand(node.port, ['CLUSTER', 'INFO'], ms(2000)).catch(() => '')
    if (!/^cluster_state:ok\r?$/m.test(String(info))) return false
  }
  return true
}

async function waitFor(what: string, check: () => Promise<boolean>, withinMs = ms(30_000)): Promise<number> {
  const started = Date.now()
  while (!(await check())) {
    if (Date.now() - started > withinMs) throw new Error(`${what}: not within ${withinMs} ms`)
    await sleep(100)
  }
  return Date.now() - started
}

export async function startClusterStore(): Promise<ChaosStore> {
  const cluster = await startRedisCluster(3, 1)
  return { kind: 'redis-cluster', url: cluster.url, proxyPorts: [], close: () => cluster.stop(),
    faults: {
      'store-restart': async (random, names) => {
        const node = random.pick(await mastersOf(cluster))
        const kept = await Promise.all(names.map(async (name) => (await clusterSlotOwner(cluster, slotOfName(name))) === node))
        await node.kill()
        const at = historyNow()
        await node.restart()
        // Its replica resyncs from it (empty too), or was promoted if the restart outlasted the node timeout.
        const role = await roleOf(node)
        const detail = `master :${node.port} killed (-9) and started again, empty; a ${role} now`
        // Emptied only if it serves its slots again (a promoted replica kept them).
        return role === 'master' ? { detail, emptied: { at, names: names.filter((_, i) => kept[i]) } } : detail
      },
      // Cluster clients are not proxied: the notice connections are cut from the servers' side.
      // Right after, the runner forces up to two held names: their holders
      // hear of it only if their notice connections came back and they
      // looked again (the checker's loss-unnoticed warns otherwise).
      'notice-kill': async (random, _names, run) => {
        const held = await run.heldNames()
        // One draw from the nemesis whatever is held, so its later choices stay those of the seed.
        const pick = new Random(random.int(0, 2 ** 31 - 1))
        const first = held.length > 0 ? pick.pick(held) : undefined
        const rest = held.filter((n) => n !== first)
        const forced = first === undefined ? [] : rest.length > 0 ? [first, pick.pick(rest)] : [first]
        const killed = await Promise.all(cluster.nodes.map((n) => redisCommand(n.port, ['CLIENT', 'KILL', 'TYPE', 'pubsub']).catch(() => 0)))
        const answers = await Promise.all(forced.map((name) => run.forceRelease(name)))
        return `CLIENT KILL TYPE pubsub on every node: ${killed.map(Number).reduce((a, b) => a + b, 0)} notice connections cut; ` +
          `then forced: ${forced.map((name, i) => `"${name}" (${answers[i]})`).join(', ') || 'nothing held'}`
      },
      // A live resharding of the slot one of the run's names lives in, while its clients hold, wait and renew.
      'slot-move': async (random, names) => {
        const name = random.pick(names)
        const slot = slotOfName(name)
        const from = await clusterSlotOwner(cluster, slot)
        const to = random.pick((await mastersOf(cluster)).filter((n) => n !== from))
        await moveClusterSlot({ ...cluster, nodes: await mastersOf(cluster) }, slot, to)
        return `slot ${slot} ("${name}") moved from :${from.port} to :${to.port}`
      },
      // kill -9 of a master while one of its slots migrates, after none, some
      // or all of the slot's keys moved (seeded). The replica promoted in its
      // place serves the slot with the keys it has, while those already moved
      // wait on a target still importing from a dead node, which keeps its
      // view of the slot (the dead owner: cluster_state fail, its own slots
      // refused too) until an operator fixes it. Healed once that fix is done
      // (the move finished from the new master, its keys winning over the
      // target's), the old master back as a replica.
      'migrating-failover': async (random, names) => {
        const name = random.pick(names)
        const slot = slotOfName(name)
        const from = await clusterSlotOwner(cluster, slot)
        const to = random.pick((await mastersOf(cluster)).filter((n) => n !== from))
        const share = random.pick([0, 0.5, 1])
        const replica = (await replicasOf(cluster, from))[0]
        if (!replica) return `master :${from.port} has no replica now: nothing done`
        await openSlotMigration(from, to, slot)
        const keys = Number(await redisCommand(from.port, ['CLUSTER', 'COUNTKEYSINSLOT', String(slot)]))
        const moved = await migrateSlotKeys(from, to, slot, { limit: Math.floor(keys * share) })
        await from.kill()
        const at = historyNow()
        // The target, importing, takes no news of the slot's owner: it still sees the dead one (cluster_state fail) until the fix.
        const others = cluster.nodes.filter((n) => n !== from && n !== to)
        const promotedIn = await waitFor(`replica :${replica.port} promoted`, async () => (await roleOf(replica)) === 'master' && await clusterOk(others))
        await from.restart()
        await waitFor(`:${from.port} back as a replica`, async () => (await roleOf(from)) === 'slave' && await clusterOk([...others, from]))
        const owner = await clusterSlotOwner({ ...cluster, nodes: others }, slot)
        // The fix: the target told the slot's owner (it answers again), then the move done again from there.
        await redisCommand(to.port, ['CLUSTER', 'SETSLOT', String(slot), 'NODE', String(await redisCommand(owner.port, ['CLUSTER', 'MYID']))])
        await openSlotMigration(owner, to, slot)
        await migrateSlotKeys(owner, to, slot, { replace: true })
        await assignSlot({ ...cluster, nodes: await mastersOf(cluster) }, slot, to, owner)
        await waitFor('the cluster ok after the fix', () => clusterOk(cluster.nodes))
        const detail = `slot ${slot} ("${name}") migrating from :${from.port} to :${to.port}, ${moved} of ${keys} keys moved, when :${from.port} was killed (-9); ` +
          `its replica :${replica.port} promoted after ${promotedIn} ms; the move finished from :${owner.port}`
        // The keys moved before the kill were missing where the slot was served.
        const emptiedNames = names.filter((n) => slotOfName(n) === slot)
        return moved > 0 ? { detail, emptied: { at, names: emptiedNames } } : detail
      },
      // kill -9 of a master: after the node timeout its replica is elected in
      // its place (writes it had not replicated are lost). Healed once the
      // replica serves and the old master, started again empty, has become its
      // replica: until then a client with an old slot map can still reach a
      // master the others do not follow.
      failover: async (random) => {
        const master = random.pick(await mastersOf(cluster))
        const replica = (await replicasOf(cluster, master))[0]
        if (!replica) return `master :${master.port} has no replica now: nothing done`
        await master.kill()
        const promotedIn = await waitFor(`replica :${replica.port} promoted`, async () =>
          (await roleOf(replica)) === 'master' && await clusterOk(cluster.nodes.filter((n) => n !== master)))
        await master.restart()
        const rejoinedIn = await waitFor(`:${master.port} back as a replica`, async () =>
          (await roleOf(master)) === 'slave' && await clusterOk(cluster.nodes))
        return `master :${master.port} killed (-9); its replica :${replica.port} promoted after ${promotedIn} ms; the old master started again empty, a replica after ${rejoinedIn} ms more`
      },
    } }
}

/**
 * Replica acknowledgement (`?replicas=N`) on a real replicated Redis: 1
 * master, 2 replicas (each replication link through a proxy that can hold
 * the master's writes back), 3 Sentinels. Each failover round starts a fresh
 * topology, holds replication back, grants, SIGKILLs the master and lets
 * Sentinel promote a replica that never received what was held back.
 * BATON_FAILOVERS sets the rounds per mode (default 3; docs/stores/redis.md
 * has the figures of a 20-round run). No verdict counts on timing: each
 * round's loss is made by the held-back link, not by a race.
 */
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { connect, isBatonError, type Baton } from '../../src/index.js'
import { aborted, nextEvent } from '../conformance/context.js'
import { startReplicatedRedis, type ReplicatedRedis } from '../harness/replicated.js'
import { clusterSlotOwner, redisCommand, startRedisCluster, stopAll, type RedisServer } from '../harness/servers.js'
import { slotOfName } from '../../src/drivers/redis/keys.js'
import { ms } from '../harness/timing.js'

after(() => stopAll())

const FAILOVERS = Number(process.env['BATON_FAILOVERS'] ?? 3)
const ACKED = `?replicas=2&replicaTimeout=${ms(1000)}`
const CONNECT = { commandTimeout: ms(3000) }

interface Round {
  /** The promoted master granted B the name A held: A's grant was lost. */
  lost: boolean
  /**
   * And A still believed it held it (two holders). Not every lost grant is
   * one: A's client, reconnected, may find its hold gone and fire its signal
   * before B asks; which comes first is a race, so it is counted, not asserted.
   */
  overlap: boolean
  /** The renewed hold was gone from the promoted master. */
  renewalLost: boolean
  /** ... and its signal fired. */
  renewalSignalled: boolean
}

/** One failover: A holds two names (one renewed), the master dies with replication held back, B asks for the first. */
async function failoverRound(acked: boolean): Promise<Round> {
  const redis = await startReplicatedRedis()
  const clients: Baton[] = []
  try {
    const url = redis.url + (acked ? ACKED : '')
    // B asks without the option: the question is whether the promoted master grants A's name to anyone else.
    const [a, b] = [await connect(url, CONNECT), await connect(redis.url, CONNECT)]
    clients.push(a, b)
    redis.holdReplication(true)
    const grant = async (name: string, ttl: number, autoExtend: boolean) => {
      if (!acked) return a.mutex(name, { ttl }).acquire({ autoExtend })
      // The grant waits for both replicas: let them have it, then hold again.
      const letGo = setTimeout(() => redis.holdReplication(false), ms(100))
      try {
        return await a.mutex(name, { ttl }).acquire({ autoExtend })
      } finally {
        clearTimeout(letGo)
        redis.holdReplication(true)
      }
    }
    // Not renewed, a lease longer than the round: A believes in it throughout.
    const orders = await grant('orders', ms(60_000), false)
    const renewed = await grant('renewed', ms(2000), true)
    await redis.failOver()
    // One answer of the promoted master (granted, or busy), however long the switch takes B.
    let answer: 'granted' | 'busy' | undefined
    const until = Date.now() + ms(30_000)
    while (answer === undefined && Date.now() < until) {
      answer = await b.mutex('orders').acquire({ wait: 0 }).then(
        () => 'granted' as const,
        (error: unknown) => {
          if (isBatonError(error, 'LOCK_TIMEOUT')) return 'busy' as const
          if (isBatonError(error) && error.retryable) return undefined
          throw error
        },
      )
      if (answer === undefined) await new Promise((resolve) => setTimeout(resolve, ms(100)))
    }
    assert.ok(answer, 'the promoted master answered')
    const overlap = answer === 'granted' && !orders.signal.aborted
    if (process.env['BATON_FAILOVERS_LOG']) console.log(`round: ${answer}, A's signal ${orders.signal.aborted ? `fired (${String(orders.signal.reason)})` : 'not fired'}`)
    const holder = (await b.inspect('renewed').catch(() => null))?.holders.find((h) => h.token === renewed.token)
    const renewalLost = holder === undefined
    const renewalSignalled = renewalLost && isBatonError(await aborted(renewed.signal, ms(10_000)), 'LEASE_LOST')
    return { lost: answer === 'granted', overlap, renewalLost, renewalSignalled }
  } finally {
    await Promise.allSettled(clients.map((c) => c.close()))
    await redis.stop()
  }
}

describe('redis replica acknowledgement', () => {
  let redis: ReplicatedRedis

  it('refuses a misspelt option and Redlock, naming why', async () => {
    const misspelt = await connect('redis://127.0.0.1:1/?replica=2').catch((e: unknown) => e)
    assert.ok(isBatonError(misspelt, 'INVALID_ARGUMENT'), String(misspelt))
    assert.match(misspelt.message, /did you mean "replicas"/)
    const redlock = await connect('redlock://127.0.0.1:1,127.0.0.1:2,127.0.0.1:3?replicas=1').catch((e: unknown) => e)
    assert.ok(isBatonError(redlock, 'INVALID_ARGUMENT'), String(redlock))
    assert.match(redlock.message, /independent masters/)
    const slow = await connect('redis://127.0.0.1:1/?replicas=1&replicaTimeout=5s', { commandTimeout: '2s' }).catch((e: unknown) => e)
    assert.ok(isBatonError(slow, 'INVALID_ARGUMENT'), String(slow))
    assert.match(slow.message, /replicaTimeout.*commandTimeout/)
  })

  it('a grant the replicas do not acknowledge is given back: REPLICA_ACK_TIMEOUT, retryable', async () => {
    // No failover here: the Sentinels must not re-point the replicas past their held links while these tests run.
    redis = await startReplicatedRedis({ failoverTimeoutMs: ms(600_000) })
    const baton = await connect(redis.master.url + `?replicas=2&replicaTimeout=${ms(300)}`, CONNECT)
    const plain = await connect(redis.master.url, CONNECT)
    redis.holdReplication(true)
    const error = await baton.mutex('held-back').acquire().catch((e: unknown) => e)
    assert.ok(isBatonError(error, 'REPLICA_ACK_TIMEOUT'), String(error))
    assert.equal(error.retryable, true)
    assert.match(error.message, /"replicas"/)
    assert.match(error.message, /"replicaTimeout"/)
    // Given back: the name is free on the master.
    assert.deepEqual((await plain.inspect('held-back'))?.holders ?? [], [])
    redis.holdReplication(false)
    const lease = await acknowledged(() => baton.mutex('held-back').acquire())
    await lease.release()
    await Promise.all([baton.close(), plain.close()])
  })

  it('a renewal the replicas do not acknowledge does not advance the deadline: the signal fires', async () => {
    const baton = await connect(redis.master.url + `?replicas=2&replicaTimeout=${ms(200)}`, CONNECT)
    const lease = await baton.mutex('renewal', { ttl: ms(1500) }).acquire({ autoExtend: true })
    redis.holdReplication(true)
    try {
      // The master renews it (its key lives on), but no renewal is acknowledged.
      const reason = await aborted(lease.signal, ms(10_000))
      assert.ok(isBatonError(reason, 'LEASE_LOST'), String(reason))
    } finally {
      redis.holdReplication(false)
    }
    await baton.close()
  })

  it('a hand-over is confirmed by the new holder before it is told', async () => {
    const baton = await connect(redis.master.url + `?replicas=2&replicaTimeout=${ms(2000)}`, CONNECT)
    const first = await baton.mutex('handover').acquire()
    // In line (its join answered busy) before replication stops: a fixed sleep was too short on a busy machine.
    const queued = nextEvent<{ name: string }>('baton:wait', (m) => m.name === 'handover')
    const second = baton.mutex('handover').acquire({ wait: ms(10_000) })
    await queued
    redis.holdReplication(true)
    await first.release()
    let granted = false
    void second.then(() => (granted = true), () => {})
    await new Promise((resolve) => setTimeout(resolve, ms(300)))
    assert.equal(granted, false, 'told it holds before the replicas had the hand-over')
    redis.holdReplication(false)
    const lease = await second
    await lease.release()
    await baton.close()
    await redis.stop()
  })

  for (const acked of [false, true]) {
    it(`${acked ? `with ${ACKED}` : 'without the option'}: ${FAILOVERS} Sentinel failovers`, { timeout: ms(120_000) * FAILOVERS }, async () => {
      const rounds: Round[] = []
      for (let i = 0; i < FAILOVERS; i++) rounds.push(await failoverRound(acked))
      const count = (key: keyof Round) => rounds.filter((r) => r[key]).length
      console.log(`replicas ${acked ? '2' : 'none'}: ${FAILOVERS} failovers, ${count('lost')} grants lost (the name granted again), ` +
        `${count('overlap')} of them overlaps (two holders), ${count('renewalLost')} renewed holds lost, ${count('renewalSignalled')} of them signalled`)
      assert.equal(count('renewalSignalled'), count('renewalLost'), 'every lost renewal is signalled')
      if (acked) {
        assert.equal(count('lost'), 0, 'an acknowledged grant survives the failover')
        assert.equal(count('overlap'), 0)
      } else {
        assert.equal(count('lost'), FAILOVERS, 'each held-back grant is lost in the failover')
      }
    })
  }

  it('cluster, one replica per master: a stopped replica fails the grant; an acknowledged hold survives its master\'s failover', { timeout: ms(120_000) }, async () => {
    const cluster = await startRedisCluster(3, 1)
    const clients: Baton[] = []
    try {
      const name = 'cluster/orders'
      const master = await clusterSlotOwner(cluster, slotOfName(name))
      let replica: RedisServer | undefined
      await until('the replica of the name\'s master', async () => {
        const info = await redisCommand(master.port, ['INFO', 'replication'])
        const port = typeof info === 'string' ? /^slave0:.*port=(\d+),state=online/m.exec(info)?.[1] : undefined
        replica = cluster.nodes.find((node) => String(node.port) === port)
        return replica !== undefined
      })
      const a = await connect(cluster.url + `?replicas=1&replicaTimeout=${ms(500)}`, CONNECT)
      const b = await connect(cluster.url, CONNECT)
      clients.push(a, b)
      replica!.pause()
      const error = await a.mutex(name).acquire().catch((e: unknown) => e).finally(() => replica!.resume())
      assert.ok(isBatonError(error, 'REPLICA_ACK_TIMEOUT'), String(error))
      const lease = await acknowledged(() => a.mutex(name, { ttl: ms(30_000) }).acquire())
      await master.kill()
      await until('the replica promoted', async () => {
        const info = await redisCommand(replica!.port, ['INFO', 'replication'])
        return typeof info === 'string' && /^role:master/m.test(info)
      })
      // The promoted replica has the acknowledged hold: nobody else is granted the name.
      let info = null
      await until('the name readable on the promoted master', async () => {
        info = await b.inspect(name)
        return true
      })
      assert.ok(info!.holders.some((h: { token: bigint }) => h.token === lease.token), 'the promoted replica has the acknowledged hold')
      const other = await b.mutex(name).acquire({ wait: 0 }).catch((e: unknown) => e)
      assert.ok(isBatonError(other, 'LOCK_TIMEOUT'), String(other))
    } finally {
      await Promise.allSettled(clients.map((c) => c.close()))
      await cluster.stop()
    }
  })
})

/**
 * A grant once replication flows again. The replicas catch up on what they
 * missed first (a replica resumed from SIGSTOP reads its backlog), which on a
 * busy machine can outlast one replicaTimeout: REPLICA_ACK_TIMEOUT is
 * retryable, and is retried here as a user would, so the verdict is the
 * grant's, not the machine's speed.
 */
async function acknowledged<T>(acquire: () => Promise<T>, timeoutMs = ms(30_000)): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      return await acquire()
    } catch (error) {
      if (!isBatonError(error, 'REPLICA_ACK_TIMEOUT') || Date.now() >= deadline) throw error
    }
  }
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = ms(30_000)): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (await check().catch(() => false)) return
    if (Date.now() >= deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, ms(100)))
  }
}

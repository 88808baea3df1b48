/**
 * etcd-only failure behaviour, against a real 3-member cluster started once
 * for this file: a killed leader, interplay with `etcdctl lock`, and the
 * typed errors of bad URLs, unreachable servers and wrong credentials.
 */
import assert from 'node:assert/strict'
import { spawn, execFile } from 'node:child_process'
import { createInterface } from 'node:readline'
import { promisify } from 'node:util'
import { after, before, describe, it } from 'node:test'
import { connect, isBatonError, type Baton } from '../../src/index.js'
import { aborted, nextEvent, withTimeout } from '../conformance/context.js'
import type { WaitEvent } from '../../src/core/events.js'
import { startEtcd, startEtcdCluster, type EtcdCluster } from '../harness/etcd.js'
import { freePort } from '../harness/ports.js'
import { stopAll } from '../harness/servers.js'
import { ms } from '../harness/timing.js'
import { loseAndRegainMajority } from '../harness/quorum.js'

const run = promisify(execFile)

let cluster: EtcdCluster
const clients: Baton[] = []
async function client(url = cluster.url): Promise<Baton> {
  const baton = await connect(url)
  clients.push(baton)
  return baton
}

before(async () => {
  cluster = await startEtcdCluster(3)
})
after(async () => {
  await Promise.allSettled(clients.map((c) => c.close()))
  await stopAll()
})

/** `etcdctl lock <name>`: resolves `acquired` with the key it printed once it holds the lock. */
function etcdctlLock(name: string): { acquired: Promise<string>; held: () => boolean; release: () => Promise<void> } {
  const endpoints = cluster.members.map((m) => m.endpoint).join(',')
  const child = spawn('etcdctl', ['--endpoints', endpoints, 'lock', name], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ETCDCTL_API: '3' } })
  let holding = false
  const acquired = new Promise<string>((resolve) => {
    createInterface({ input: child.stdout! }).once('line', (line) => {
      holding = true
      resolve(line)
    })
  })
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()))
  return {
    acquired: withTimeout(acquired, ms(15_000), `etcdctl lock ${name}`),
    held: () => holding,
    release: async () => {
      child.kill('SIGINT') // etcdctl unlocks and revokes its session on SIGINT
      await exited
    },
  }
}

describe('etcd faults', () => {
  it('the leader killed while locks are held and waiters wait: holds survive, waiters are served', async () => {
    const [a, b, c] = [await client(), await client(), await client()]
    const name = 'faults/leader-kill'
    const holder = await a.mutex(name, { ttl: ms(3000) }).acquire({ autoExtend: true })
    const served: bigint[] = []
    const waiters = [b, c].map(async (w) => {
      const queued = nextEvent<WaitEvent>('baton:wait', (m) => m.name === name)
      const lease = w.mutex(name, { ttl: ms(3000) }).acquire({ wait: ms(30_000) }).then(async (l) => {
        served.push(l.token)
        await l.release()
      })
      await queued
      return { lease } // wrapped: an async function returning a promise would wait for it
    })
    const pending = [(await waiters[0]!).lease, (await waiters[1]!).lease]
    const leader = await cluster.leader()
    await leader.kill()
    try {
      // Renewals go on through another member once a new leader is elected.
      await nextEvent<{ name: string }>('baton:extend', (m) => m.name === name, ms(20_000))
      await nextEvent<{ name: string }>('baton:extend', (m) => m.name === name, ms(20_000))
      assert.equal(holder.held, true, 'the hold survived the election')
      assert.equal(holder.signal.aborted, false)
      assert.deepEqual(served, [], 'nobody was served while the holder holds')
      await holder.release()
      await withTimeout(Promise.all(pending), ms(20_000), 'both waiters served')
      assert.equal(served.length, 2)
      assert.ok(served.every((t) => t > holder.token))
    } finally {
      await leader.restart()
    }
  })

  it('two of three members killed: QUORUM_NOT_REACHED naming each member, the holder\'s signal fires; back when they return', async () => {
    const leader = await cluster.leader()
    await loseAndRegainMajority({
      holderClient: await client(), otherClient: await client(),
      killed: [leader, cluster.members.find((m) => m !== leader)!],
      name: 'faults/majority', ttlMs: ms(3000),
    })
  })

  it('etcdctl lock excludes baton, and baton gets the lock when etcdctl lets go', async () => {
    const baton = await client()
    const name = 'orders/42'
    const cli = etcdctlLock(name)
    const key = await cli.acquired
    assert.ok(key.startsWith(`${name}/`), `etcdctl printed its key ${key}`)
    assert.equal(await baton.mutex(name).tryAcquire(), null, 'baton sees the etcdctl holder')
    const view = await baton.inspect(name)
    assert.equal(view?.holders.length, 1)
    const waiting = baton.mutex(name).acquire({ wait: ms(15_000) })
    await cli.release()
    const lease = await waiting
    assert.ok(lease.token > 0n)
    await lease.release()
  })

  it('baton excludes etcdctl lock, which gets the lock when baton releases', async () => {
    const baton = await client()
    const name = 'orders/43'
    const lease = await baton.mutex(name).acquire()
    const cli = etcdctlLock(name)
    // Synchronise on the store: etcdctl's key is in line behind ours.
    for (;;) {
      const view = await baton.inspect(name)
      if ((view?.waiters.length ?? 0) > 0) break
      await new Promise((r) => setTimeout(r, 20))
    }
    assert.equal(cli.held(), false, 'etcdctl waits while baton holds')
    await lease.release()
    const key = await cli.acquired
    assert.ok(key.startsWith(`${name}/`))
    assert.equal(await baton.mutex(name).tryAcquire(), null, 'and now excludes baton')
    await cli.release()
    const again = await baton.mutex(name).acquire({ wait: ms(10_000) })
    await again.release()
  })

  it('bad URLs get INVALID_ARGUMENT', async () => {
    for (const url of ['etcd://', 'etcd://127.0.0.1:2379/some/path', 'etcd://h:70000', 'etcds://127.0.0.1:1?ca=/nonexistent/ca.pem', 'etcd://127.0.0.1:2379?colour=blue']) {
      await assert.rejects(connect(url), (e) => isBatonError(e, 'INVALID_ARGUMENT'), url)
    }
  })

  it('a lock delay is refused with INVALID_ARGUMENT, never ignored', async () => {
    const baton = await client()
    await assert.rejects(baton.mutex('faults/delay', { lockDelay: '1s' }).acquire(), (e) => isBatonError(e, 'INVALID_ARGUMENT') && /lockDelay/.test((e as Error).message))
    assert.equal(await baton.inspect('faults/delay'), null, 'and nothing was left in the store')
  })

  it('an unreachable endpoint gives a prompt BACKEND_UNAVAILABLE', async () => {
    const port = await freePort()
    const error = await withTimeout(connect(`etcd://127.0.0.1:${port}`, { connectTimeout: ms(1000) }).catch((e: unknown) => e), ms(15_000), 'connect to fail')
    assert.ok(isBatonError(error, 'BACKEND_UNAVAILABLE'), String(error))
    assert.equal(error.retryable, true)
  })

  it('wrong credentials give UNAUTHORIZED without the password in the message; right ones work', async () => {
    const secured = await startEtcd()
    try {
      const endpoint = secured.members[0]!.endpoint
      const etcdctl = (...args: string[]) => run('etcdctl', ['--endpoints', endpoint, ...args], { env: { ...process.env, ETCDCTL_API: '3' } })
      await etcdctl('user', 'add', 'root', '--new-user-password=s3cret-root')
      await etcdctl('auth', 'enable')
      const error = await connect(`${secured.url.replace('etcd://', 'etcd://root:wrong-pass@')}`, { connectTimeout: ms(3000) }).catch((e: unknown) => e)
      assert.ok(isBatonError(error, 'UNAUTHORIZED'), String(error))
      assert.doesNotMatch(error.message, /wrong-pass/)
      const anonymous = await connect(secured.url, { connectTimeout: ms(3000) }).catch((e: unknown) => e)
      assert.ok(isBatonError(anonymous, 'UNAUTHORIZED') || isBatonError(anonymous), String(anonymous))
      const baton = await client(secured.url.replace('etcd://', 'etcd://root:s3cret-root@'))
      const lease = await baton.mutex('auth/ok').acquire()
      await lease.release()
    } finally {
      await secured.stop()
    }
  })

  it('a holder whose lease is revoked from outside loses its hold at once', async () => {
    const baton = await client()
    const name = 'faults/revoked'
    const lease = await baton.mutex(name, { ttl: ms(5000) }).acquire()
    const view = await baton.inspect(name)
    assert.match(view?.note ?? '', /lease/)
    const endpoints = cluster.members.map((m) => m.endpoint).join(',')
    const { stdout } = await run('etcdctl', ['--endpoints', endpoints, 'lease', 'list'], { env: { ...process.env, ETCDCTL_API: '3' } })
    for (const id of stdout.split('\n').slice(1).map((l) => l.trim()).filter(Boolean)) {
      await run('etcdctl', ['--endpoints', endpoints, 'lease', 'revoke', id], { env: { ...process.env, ETCDCTL_API: '3' } }).catch(() => {})
    }
    const reason = await aborted(lease.signal, ms(10_000))
    assert.ok(isBatonError(reason, 'LEASE_LOST'), String(reason))
  })
})

/**
 * ZooKeeper-only failure behaviour, against real servers: a 3-server
 * ensemble losing a server, a holder process frozen past its session, a
 * frozen server, and the typed errors of bad URLs, unreachable servers and a
 * refused identity.
 */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { after, before, describe, it } from 'node:test'
import zookeeper from 'node-zookeeper-client'
import { connect, isBatonError, type Baton } from '../../src/index.js'
import { aborted, nextEvent, withTimeout } from '../conformance/context.js'
import type { WaitEvent } from '../../src/core/events.js'
import { freePort } from '../harness/ports.js'
import { stopAll } from '../harness/servers.js'
import { ms } from '../harness/timing.js'
import { loseAndRegainMajority } from '../harness/quorum.js'
import { startZookeeper, startZookeeperEnsemble, type ZkEnsemble } from '../harness/zookeeper.js'

let ensemble: ZkEnsemble
let single: ZkEnsemble
const clients: Baton[] = []
async function client(url: string): Promise<Baton> {
  const baton = await connect(url)
  clients.push(baton)
  return baton
}

before(async () => {
  // One after the other: four JVMs starting at once can miss the start-up deadline on a loaded machine.
  ensemble = await startZookeeperEnsemble(3)
  single = await startZookeeper()
})
after(async () => {
  await Promise.allSettled(clients.map((c) => c.close()))
  await stopAll()
})

/** A holder in its own process: prints "held <token>", then "lost <code>" when its signal fires. */
function holderProcess(url: string, name: string, ttlMs: number) {
  const index = fileURLToPath(new URL('../../src/index.js', import.meta.url))
  const script = `
    const { connect } = await import(${JSON.stringify(index)})
    const baton = await connect(${JSON.stringify(url)})
    const lease = await baton.mutex(${JSON.stringify(name)}, { ttl: ${ttlMs} }).acquire({ autoExtend: true })
    console.log('held ' + lease.token)
    lease.signal.addEventListener('abort', () => console.log('lost ' + lease.signal.reason.code))
    await new Promise(() => {})
  `
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
  const lines: string[] = []
  const waiting: { prefix: string; resolve: (line: string) => void }[] = []
  createInterface({ input: child.stdout! }).on('line', (line) => {
    lines.push(line)
    for (const w of waiting.filter((x) => line.startsWith(x.prefix))) w.resolve(line)
  })
  return {
    child,
    line: (prefix: string, timeoutMs = ms(15_000)) => withTimeout(new Promise<string>((resolve) => {
      const seen = lines.find((l) => l.startsWith(prefix))
      if (seen) resolve(seen)
      else waiting.push({ prefix, resolve })
    }), timeoutMs, `holder line ${prefix}`),
  }
}

describe('zookeeper faults', () => {
  it('a 3-server ensemble loses its leader: holds survive, the waiter is served after the release', async () => {
    const url = `zk://${ensemble.hosts}`
    const [a, b] = [await client(url), await client(url)]
    const name = 'faults/server-kill'
    const holder = await a.mutex(name, { ttl: ms(2000) }).acquire({ autoExtend: true })
    const queued = nextEvent<WaitEvent>('baton:wait', (m) => m.name === name)
    const waiting = b.mutex(name, { ttl: ms(2000) }).acquire({ wait: ms(30_000) })
    await queued
    let leader = ensemble.servers[0]!
    for (const server of ensemble.servers) if ((await ensemble.mode(server)) === 'leader') leader = server
    await leader.kill()
    try {
      for (let i = 0; i < 3; i++) await nextEvent<{ name: string }>('baton:extend', (m) => m.name === name, ms(20_000))
      assert.equal(holder.held, true, 'the hold survived the server loss')
      await holder.release()
      const next = await waiting
      assert.ok(next.token > holder.token)
      await next.release()
    } finally {
      await leader.restart()
    }
  })

  it('two of three servers killed: QUORUM_NOT_REACHED naming each server, the holder\'s signal fires; back when they return', async () => {
    await loseAndRegainMajority({
      holderClient: await client(`zk://${ensemble.hosts}`), otherClient: await client(`zk://${ensemble.hosts}`),
      killed: ensemble.servers.slice(0, 2),
      name: 'faults/majority', ttlMs: ms(2000),
    })
  })

  it('a holder process frozen past its session: the next waiter is granted, and the holder learns on waking', async () => {
    const url = `zk://${single.hosts}`
    const name = 'faults/frozen-holder'
    const frozen = holderProcess(url, name, ms(1000))
    const heldToken = BigInt((await frozen.line('held')).split(' ')[1]!)
    const b = await client(url)
    const queued = nextEvent<WaitEvent>('baton:wait', (m) => m.name === name)
    const waiting = b.mutex(name).acquire({ wait: ms(20_000) })
    await queued
    frozen.child.kill('SIGSTOP')
    try {
      const lease = await waiting
      assert.ok(lease.token > heldToken, 'granted after the frozen holder\'s session expired')
      frozen.child.kill('SIGCONT')
      assert.match(await frozen.line('lost'), /lost LEASE_LOST/)
      await lease.release()
    } finally {
      frozen.child.kill('SIGCONT')
      frozen.child.kill('SIGKILL')
    }
  })

  it('the server a holder is connected to freezes: the holder\'s signal fires by its own clock', async () => {
    const url = `zk://${single.hosts}`
    const a = await client(url)
    const name = 'faults/frozen-server'
    const lease = await a.mutex(name, { ttl: ms(1500) }).acquire({ autoExtend: true })
    const server = single.servers[0]!
    server.pause()
    try {
      const reason = await aborted(lease.signal, ms(10_000))
      assert.ok(isBatonError(reason, 'LEASE_LOST'), String(reason))
    } finally {
      server.resume()
    }
    const again = await (await client(url)).mutex(name).acquire({ wait: ms(15_000) })
    assert.ok(again.token > lease.token)
    await again.release()
  })

  it('closing a client ends its session: its holds end at once and their signals fire', async () => {
    const url = `zk://${single.hosts}`
    const closing = await connect(url)
    const name = 'faults/closed'
    const lease = await closing.mutex(name, { ttl: ms(10_000) }).acquire()
    await closing.close()
    const reason = await aborted(lease.signal, ms(5000))
    assert.ok(isBatonError(reason, 'LEASE_LOST'), String(reason))
    const next = await (await client(url)).mutex(name).acquire({ wait: ms(5000) })
    assert.ok(next.token > lease.token)
    await next.release()
  })

  it('a call still on its way when close() ran opens no session (one would reconnect for ever and keep the process alive)', async () => {
    const closing = await connect(`zk://${single.hosts}`)
    await closing.mutex('faults/closing').tryAcquire().then((lease) => lease?.release())
    await closing.close()
    // What a renewal, a waiter's re-read or an election observer in flight reaches after close():
    // the driver itself, past the client's own closed check.
    await assert.rejects(closing.driver.inspect('faults/closing'), (error: unknown) => isBatonError(error, 'CLOSED'))
  })

  it('bad URLs get INVALID_ARGUMENT', async () => {
    for (const bad of ['zk://', 'zk://127.0.0.1:2181/bad//chroot', 'zk://127.0.0.1:2181?colour=blue', 'zk://h:70000']) {
      await assert.rejects(connect(bad), (e) => isBatonError(e, 'INVALID_ARGUMENT'), bad)
    }
  })

  it('an unreachable ensemble gives a prompt BACKEND_UNAVAILABLE', async () => {
    const port = await freePort()
    const error = await withTimeout(connect(`zk://127.0.0.1:${port}`, { connectTimeout: ms(1000) }).catch((e: unknown) => e), ms(15_000), 'connect to fail')
    assert.ok(isBatonError(error, 'BACKEND_UNAVAILABLE'), String(error))
  })

  it('an identity the chroot\'s ACL refuses gives UNAUTHORIZED without the password; the right one works', async () => {
    const admin = zookeeper.createClient(single.hosts)
    await new Promise<void>((resolve) => {
      admin.once('connected', () => resolve())
      admin.connect()
    })
    const digest = createHash('sha1').update('app:right-pass').digest('base64')
    const acl = [new zookeeper.ACL(zookeeper.Permission.ALL, new zookeeper.Id('digest', `app:${digest}`))]
    await new Promise<void>((resolve, reject) => admin.create('/secure', Buffer.alloc(0), acl, zookeeper.CreateMode.PERSISTENT, (e) => (e ? reject(e) : resolve())))
    admin.close()
    const error = await connect(`zk://app:wrong-pass@${single.hosts}/secure`, { connectTimeout: ms(3000) }).catch((e: unknown) => e)
    assert.ok(isBatonError(error, 'UNAUTHORIZED'), String(error))
    assert.doesNotMatch(error.message, /wrong-pass/)
    const baton = await client(`zk://app:right-pass@${single.hosts}/secure`)
    const lease = await baton.mutex('secure/ok').acquire()
    await lease.release()
  })
})

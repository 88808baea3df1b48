/**
 * etcd-only failure behaviour, against a real 3-member cluster started once
 * for this file: a killed leader, interplay with `etcdctl lock`, and the
 * typed errors of bad URLs, unreachable servers and wrong credentials.
 */
import assert from 'node:assert/strict'
import { execFile, spawn } from 'node:child_process'
import { promisify } from 'node:util'
import { createInterface } from 'node:readline'
import { after, before, describe, it } from 'node:test'
import { connect, isBatonError, type Baton } from '../../src/index.js'
import { aborted, nextEvent, withTimeout } from '../conformance/context.js'
import type { WaitEvent } from '../../src/core/events.js'
import { ETCD_ROOT_PASSWORD, startEtcdCluster, startSecuredEtcd, type EtcdCluster } from '../harness/etcd.js'
import { freePort } from '../harness/ports.js'
import { stopAll } from '../harness/servers.js'
import { startProxy } from '../harness/proxy.js'
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

/** `etcdctl elect <args>`: every line it prints, and a way to wait for one. */
function etcdctlElect(args: string[]): { line: (text: string) => Promise<void>; lines: string[]; stop: () => Promise<void> } {
  const endpoints = cluster.members.map((m) => m.endpoint).join(',')
  const child = spawn('etcdctl', ['--endpoints', endpoints, 'elect', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ETCDCTL_API: '3' } })
  const lines: string[] = []
  const waiting: { text: string; resolve: () => void }[] = []
  createInterface({ input: child.stdout! }).on('line', (line) => {
    lines.push(line)
    for (const w of waiting.filter((w) => w.text === line)) w.resolve()
  })
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()))
  return {
    lines,
    line: (text) => lines.includes(text)
      ? Promise.resolve()
      : withTimeout(new Promise<void>((resolve) => waiting.push({ text, resolve })), ms(15_000), `etcdctl elect ${args.join(' ')} printing ${text}`),
    stop: async () => {
      child.kill('SIGINT') // etcdctl resigns and revokes its session on SIGINT
      await exited
    },
  }
}

async function untilWaiting(baton: Baton, name: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (((await baton.inspect(name))?.waiters.length ?? 0) > 0) return
    await new Promise((r) => setTimeout(r, 20))
  }
  throw new Error(`nobody waits for ${name}`)
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

  it('etcdctl elect leads: baton reads its value, campaigns behind it, and leads once it resigns', async () => {
    const baton = await client()
    const name = 'elections/cli-first'
    const cli = etcdctlElect([name, 'cli-value'])
    await cli.line('cli-value')
    const leader = await baton.election(name).leader()
    assert.equal(leader?.value, 'cli-value', 'baton reads the value etcdctl proclaimed')
    const stop = new AbortController()
    const feed = baton.election(name).observe({ signal: stop.signal })[Symbol.asyncIterator]()
    assert.equal((await feed.next()).value?.value, 'cli-value')
    const campaign = baton.election(name, { ttl: ms(3000) }).campaign({ value: 'baton', wait: ms(15_000) })
    await untilWaiting(baton, name)
    await cli.stop()
    const term = await campaign
    assert.ok(term.token > leader!.token)
    let change = (await feed.next()).value
    if (change === null) change = (await feed.next()).value
    assert.deepEqual(change, { value: 'baton', token: term.token })
    stop.abort()
    await term.resign()
  })

  it('baton leads: etcdctl elect -l sees its value and proclaims, etcdctl elect waits and leads once baton resigns', async () => {
    const baton = await client()
    const name = 'elections/baton-first'
    const term = await baton.election(name, { ttl: ms(3000) }).campaign({ value: 'baton-a' })
    const listener = etcdctlElect(['-l', name])
    try {
      await listener.line('baton-a')
      await term.proclaim('baton-b')
      await listener.line('baton-b')
      const cli = etcdctlElect([name, 'cli-value'])
      await untilWaiting(baton, name)
      assert.ok(!cli.lines.includes('cli-value'), 'etcdctl waits while baton leads')
      await term.resign()
      await cli.line('cli-value')
      await listener.line('cli-value')
      assert.equal((await baton.election(name).leader())?.value, 'cli-value')
      await cli.stop()
    } finally {
      await listener.stop()
    }
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

  it('an unreachable endpoint gives a prompt BACKEND_UNAVAILABLE', async () => {
    const port = await freePort()
    const error = await withTimeout(connect(`etcd://127.0.0.1:${port}`, { connectTimeout: ms(1000) }).catch((e: unknown) => e), ms(15_000), 'connect to fail')
    assert.ok(isBatonError(error, 'BACKEND_UNAVAILABLE'), String(error))
    assert.equal(error.retryable, true)
  })

  it('wrong credentials give UNAUTHORIZED without the password in the message; right ones work', async () => {
    const secured = await startSecuredEtcd()
    try {
      const error = await connect(`${secured.url.replace('etcd://', 'etcd://root:wrong-pass@')}`, { connectTimeout: ms(3000) }).catch((e: unknown) => e)
      assert.ok(isBatonError(error, 'UNAUTHORIZED'), String(error))
      assert.doesNotMatch(error.message, /wrong-pass/)
      const anonymous = await connect(secured.url, { connectTimeout: ms(3000) }).catch((e: unknown) => e)
      assert.ok(isBatonError(anonymous, 'UNAUTHORIZED') || isBatonError(anonymous), String(anonymous))
      const baton = await client(secured.url.replace('etcd://', `etcd://root:${ETCD_ROOT_PASSWORD}@`))
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

  it('a process whose client\'s keepalive stream stalled and was cut, then closed, exits', async () => {
    const member = cluster.members[0]!
    const proxy = await startProxy(member.port)
    try {
      // etcd3's own keepalive loop, stalled past its lease (its stream times
      // out and a second is opened) and then cut (both streams fail at once),
      // ran two loops, and a release stopped only one: its interval kept the
      // process alive for good.
      const script = `
        import { connect } from ${JSON.stringify(new URL('../../src/index.js', import.meta.url).href)}
        import { createInterface } from 'node:readline'
        const baton = await connect(${JSON.stringify(`etcd://127.0.0.1:${proxy.port}`)})
        await baton.mutex('faults/keepalive-cut', { ttl: 1000 }).acquire()
        console.log('held')
        createInterface({ input: process.stdin }).on('line', async () => {
          await baton.close()
          console.log('closed')
        })`
      const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] })
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
      const lines = createInterface({ input: child.stdout! })
      const said = (line: string) => new Promise<void>((resolve) => lines.on('line', (l) => l === line && resolve()))
      try {
        await withTimeout(said('held'), ms(15_000), 'the child holds')
        await proxy.partition(2500)
        // The keepalives come back over new connections before the client closes.
        await new Promise((resolve) => setTimeout(resolve, ms(1500)))
        child.stdin!.end('close\n')
        await withTimeout(said('closed'), ms(15_000), 'the child closed its client')
        assert.equal(await withTimeout(exited, ms(15_000), 'the child exited after closing its client'), 0)
      } finally {
        child.kill('SIGKILL')
      }
    } finally {
      await proxy.close()
    }
  })

  it('a process whose client was closed while its watch stream was held and then cut exits', async () => {
    const member = cluster.members[0]!
    const proxy = await startProxy(member.port)
    const holder = await client()
    const names = ['faults/close-exits-a', 'faults/close-exits-b']
    const held = await Promise.all(names.map((name) => holder.mutex(name).acquire()))
    try {
      // The child waits on one name (a watch through the proxy); while every
      // reply is held, it starts waiting on another (a watch etcd never
      // confirms) and closes its client.
      const script = `
        import { connect } from ${JSON.stringify(new URL('../../src/index.js', import.meta.url).href)}
        import { createInterface } from 'node:readline'
        import diagnostics_channel from 'node:diagnostics_channel'
        diagnostics_channel.subscribe('baton:wait', () => console.log('waiting'))
        const baton = await connect(${JSON.stringify(`etcd://127.0.0.1:${proxy.port}`)}, { commandTimeout: 500 })
        const wait = (name) => baton.mutex(name).acquire({ wait: 60_000 }).catch(() => {})
        wait(${JSON.stringify(names[0])})
        createInterface({ input: process.stdin }).on('line', async (line) => {
          if (line === 'another') return wait(${JSON.stringify(names[1])})
          await baton.close()
          console.log('closed')
        })`
      const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] })
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
      const lines = createInterface({ input: child.stdout! })
      const said = (line: string) => new Promise<void>((resolve) => lines.on('line', (l) => l === line && resolve()))
      await withTimeout(said('waiting'), ms(15_000), 'the child queued on the name')
      const partition = proxy.partition(ms(2000))
      child.stdin!.write('another\n')
      await new Promise((resolve) => setTimeout(resolve, ms(300)))
      // Its stdin ends too: nothing of the test's own keeps the child alive.
      child.stdin!.end('close\n')
      await withTimeout(said('closed'), ms(15_000), 'the child closed its client')
      await partition
      try {
        assert.equal(await withTimeout(exited, ms(15_000), 'the child exited after closing its client'), 0)
      } finally {
        child.kill('SIGKILL')
      }
    } finally {
      await Promise.all(held.map((lease) => lease.release()))
      await proxy.close()
    }
  })
})

/**
 * A closed ZooKeeper client lets its process end, whatever the ensemble
 * does: the library waits for the answer to its close request on a socket
 * that keeps the process alive, and a frozen server never answers.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { after, before, describe, it } from 'node:test'
import zookeeper from 'node-zookeeper-client'
import { connect } from '../../src/index.js'
import { withTimeout } from '../conformance/context.js'
import { stopAll } from '../harness/servers.js'
import { ms } from '../harness/timing.js'
import { startZookeeper, type ZkEnsemble } from '../harness/zookeeper.js'

let single: ZkEnsemble
before(async () => {
  single = await startZookeeper()
})
after(async () => {
  single.servers[0]?.resume()
  await stopAll()
})

/** A client in its own process: holds a lock and waits for another; on "close" on stdin closes the client and prints "closed". */
function clientProcess(url: string) {
  const index = fileURLToPath(new URL('../../src/index.js', import.meta.url))
  const script = `
    const { connect } = await import(${JSON.stringify(index)})
    const { createInterface } = await import('node:readline')
    const baton = await connect(${JSON.stringify(url)}, { commandTimeout: 1000 })
    const lease = await baton.mutex('close/held', { ttl: 3000 }).acquire({ autoExtend: true })
    baton.mutex('close/held', { ttl: 2000 }).acquire().catch(() => {})
    console.log('held ' + lease.token)
    for await (const line of createInterface({ input: process.stdin })) {
      if (line !== 'close') continue
      await baton.close()
      console.log('closed')
      process.stdin.destroy()
      // What keeps the process alive, should it not end (an unref'd timer keeps nothing).
      setTimeout(() => console.log('alive ' + JSON.stringify(process.getActiveResourcesInfo())), 10_000).unref()
      break
    }
  `
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] })
  const lines: string[] = []
  createInterface({ input: child.stdout! }).on('line', (line) => lines.push(line))
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  return { child, lines, exited }
}

describe('zookeeper close', () => {
  it('a client closed while its server is frozen lets its process end', async () => {
    const url = `zk://${single.hosts}`
    const proc = clientProcess(url)
    const server = single.servers[0]!
    try {
      await withTimeout((async () => {
        while (!proc.lines.some((l) => l.startsWith('held'))) await new Promise((r) => setTimeout(r, 20))
      })(), ms(20_000), 'the child to hold')
      server.pause()
      proc.child.stdin!.write('close\n')
      const code = await withTimeout(proc.exited, ms(30_000), 'the closed client\'s process to end')
        .catch((error: unknown) => {
          throw new Error(`${String(error)}; output so far: ${JSON.stringify(proc.lines)}`)
        })
      assert.equal(code, 0)
      assert.ok(proc.lines.includes('closed'), JSON.stringify(proc.lines))
    } finally {
      server.resume()
      proc.child.kill('SIGKILL')
    }
  })
})

describe('zookeeper close tidies up', () => {
  it('leaves no empty parent node of a name it used, and keeps the parents others still use', async () => {
    const chroot = `/tidy-${Date.now()}`
    const url = `zk://${single.hosts}${chroot}`
    const [one, two] = [await connect(url), await connect(url)]
    const raw = zookeeper.createClient(single.hosts)
    const connected = new Promise<void>((resolve) => raw.once('connected', () => resolve()))
    raw.connect()
    try {
      await connected
      const parents = () => new Promise<string[]>((resolve, reject) =>
        raw.getChildren(`${chroot}/baton`, (error, children) => (error ? reject(error) : resolve([...children].sort()))))
      // Released (its parent lingers), held, waited for behind another client, and held in a lock delay.
      await (await one.mutex('tidy/released').acquire()).release()
      await one.mutex('tidy/held').acquire()
      const shared = await two.mutex('tidy/shared').acquire()
      const waiting = one.mutex('tidy/shared').acquire({ wait: '30s' }).catch(() => undefined)
      for (let i = 0; i < 400 && ((await one.inspect('tidy/shared'))?.waiters.length ?? 0) < 1; i++) await new Promise((r) => setTimeout(r, 25))
      assert.deepEqual(await parents(), ['tidy%2Fheld', 'tidy%2Freleased', 'tidy%2Fshared'])
      await one.close()
      await waiting
      assert.deepEqual(await parents(), ['tidy%2Fshared'], 'only the parent another client still uses is left')
      await shared.release()
      await two.close()
      assert.deepEqual(await parents(), [], 'the last client out leaves nothing')
    } finally {
      raw.close()
      await Promise.allSettled([one.close(), two.close()])
    }
  })
})

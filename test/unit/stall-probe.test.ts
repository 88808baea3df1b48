/**
 * A fresh process whose FIRST grant is a long-poll hand-over that reached it
 * while it was stopped (SIGSTOP past the ttl): the stall must be seen, or the
 * lease is counted from after the stall and the process holds a hand-over
 * the server has already given to someone else. Run in a child process,
 * because the stall probe lives once per process.
 */
import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { connect } from '../../src/index.js'
import { startBatonServer } from '../harness/baton-server.js'
import { makeTempDir, stopAll } from '../harness/servers.js'
import { ms } from '../harness/timing.js'

after(() => stopAll())

const pause = (n: number) => new Promise((resolve) => setTimeout(resolve, n))

describe('http:// driver: a first grant read after a stall of the process', () => {
  it('is not counted from after the stall (no second holder)', async () => {
    const server = await startBatonServer()
    const script = join(makeTempDir('stall-probe'), 'waiter.mjs')
    const index = new URL('../../src/index.js', import.meta.url).href
    writeFileSync(script, `
      import { connect } from ${JSON.stringify(index)}
      const baton = await connect(process.argv[2])
      const lock = baton.mutex('stall/first', { ttl: '1s', reentrant: false })
      console.log('waiting')
      const lease = await lock.acquire({ wait: '60s', autoExtend: false })
      console.log('granted ' + lease.token)
      await lease.release().catch(() => {})
      await baton.close()
    `)
    const baton = await connect(server.base)
    try {
      const first = await baton.mutex('stall/first', { ttl: '10s', reentrant: false }).acquire()
      const child = spawn(process.execPath, [script, server.base], { stdio: ['ignore', 'pipe', 'inherit'] })
      const exited = new Promise((resolve) => child.once('exit', resolve))
      let out = ''
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => { out += chunk })
      while (!out.includes('waiting')) await pause(20)
      await pause(ms(300)) // its long-poll is in line
      child.kill('SIGSTOP')
      await first.release() // handed over to the stopped child, ttl 1s
      await pause(ms(1800)) // the hand-over expires on the server
      const second = await baton.mutex('stall/first', { ttl: '30s', reentrant: false }).acquire({ wait: '10s' })
      child.kill('SIGCONT')
      await pause(ms(1500)) // the child reads the old hand-over now
      const early = out.match(/granted (\d+)/)?.[1]
      await second.release()
      while (!out.includes('granted')) await pause(20)
      await exited
      assert.equal(early, undefined, `the child took hand-over ${early} while token ${second.token} held the lock`)
      assert.ok(BigInt(out.match(/granted (\d+)/)![1]!) > second.token)
    } finally {
      await baton.close()
    }
  })
})

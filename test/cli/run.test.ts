/**
 * `baton run` as a shell user runs it: the real binary in child processes
 * against a real redis-server, checking exit codes, environment, signals,
 * loss and mutual exclusion between two invocations.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { startRedis, type RedisServer } from '../harness/servers.js'
import { baton, nodeCommand, startBaton } from './baton-cli.js'

let redis: RedisServer
let env: Record<string, string>
let scratch: string

before(async () => {
  redis = await startRedis()
  env = { BATON_URL: redis.url }
  scratch = mkdtempSync(join(tmpdir(), 'baton-cli-'))
})
after(async () => {
  await redis?.stop()
  rmSync(scratch, { recursive: true, force: true })
})

/** Holds `name` with a `baton run` whose command sleeps until killed; resolves once the command runs. */
async function holdWithRun(name: string, ...flags: string[]) {
  const holder = startBaton(['run', name, ...flags, '--', ...nodeCommand('setInterval(() => {}, 1000)')], env)
  await holder.waitForOutput('ready')
  return holder
}

describe('baton run', () => {
  it('exits with the command\'s code and gives it BATON_LOCK, BATON_TOKEN and BATON_LEASE_EXPIRES', async () => {
    const before = Date.now()
    const result = await baton(['run', 'jobs/env', '--ttl', '20s', '--', ...nodeCommand(
      'console.log(JSON.stringify({ lock: process.env.BATON_LOCK, token: process.env.BATON_TOKEN, expires: process.env.BATON_LEASE_EXPIRES })); process.exitCode = 3')], env)
    assert.equal(result.code, 3, result.stderr)
    const seen = JSON.parse(result.stdout.split('\n')[0]!) as { lock: string; token: string; expires: string }
    assert.equal(seen.lock, 'jobs/env')
    assert.match(seen.token, /^\d+$/)
    assert.ok(BigInt(seen.token) > 0n)
    assert.ok(Number(seen.expires) > before, `BATON_LEASE_EXPIRES ${seen.expires} lies in the past`)
    assert.equal((await baton(['inspect', 'jobs/env'], env)).code, 3, 'released after the command ended')
  })

  it('exits 128 + N when the command dies of signal N, and 127 when it cannot be found', async () => {
    const killed = await baton(['run', 'jobs/signal', '--', ...nodeCommand('process.kill(process.pid, "SIGKILL")')], env)
    assert.equal(killed.code, 137, killed.stderr)
    const missing = await baton(['run', 'jobs/missing', '--', 'no-such-command-baton-test'], env)
    assert.equal(missing.code, 127)
    assert.match(missing.stderr, /command not found/)
    assert.equal((await baton(['inspect', 'jobs/missing'], env)).code, 3, 'released after the spawn failure')
  })

  it('gives up at once with --nonblock and after --wait, exiting 75 (or -E) and naming the holder', async () => {
    const holder = await holdWithRun('jobs/busy')
    const nonblock = await baton(['run', '-n', 'jobs/busy', '--', 'true'], env)
    assert.equal(nonblock.code, 75)
    assert.match(nonblock.stderr, /"jobs\/busy" was not acquired with --nonblock: held by \S+ \[[^\]]*pid \d+[^\]]*\] \(exclusive, token \d+, held [^,]+, [\d.]+s left\)/)
    const waited = await baton(['run', '--wait', '300ms', '-E', '9', 'jobs/busy', '--', 'true'], env)
    assert.equal(waited.code, 9)
    assert.match(waited.stderr, /not acquired within 300ms: held by/)
    holder.process.kill('SIGTERM')
    await holder.finished
    const free = await baton(['run', '-n', 'jobs/busy', '--', 'true'], env)
    assert.equal(free.code, 0, free.stderr)
  })

  it('waits with --wait and runs the command once the holder releases', async () => {
    const holder = await holdWithRun('jobs/queue')
    const waiter = startBaton(['run', '-w', '60s', 'jobs/queue', '--', ...nodeCommand('')], env)
    // The waiter is in line once inspect shows it.
    for (;;) {
      const view = JSON.parse((await baton(['inspect', 'jobs/queue', '--json'], env)).stdout) as { waiters: unknown[] }
      if (view.waiters.length === 1) break
      await new Promise((r) => setTimeout(r, 20))
    }
    holder.process.kill('SIGTERM')
    const result = await waiter.finished
    assert.equal(result.code, 0, result.stderr)
    assert.match(result.stdout, /ready/)
  })

  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    it(`passes ${signal} on to the command, exits with its code, then releases`, async () => {
      const name = `jobs/forward-${signal}`
      const run = startBaton(['run', name, '--', ...nodeCommand(
        `process.on(${JSON.stringify(signal)}, () => { console.log('got ${signal}'); process.exit(42) }); setInterval(() => {}, 1000)`)], env)
      await run.waitForOutput('ready')
      run.process.kill(signal)
      const result = await run.finished
      assert.equal(result.code, 42, result.stderr)
      assert.match(result.stdout, new RegExp(`got ${signal}`))
      assert.equal((await baton(['inspect', name], env)).code, 3, 'released once the command exited')
    })
  }

  it('stops the command with SIGTERM when the hold is force-released by another process, and exits 70', async () => {
    const run = startBaton(['run', 'jobs/lost', '--', ...nodeCommand(
      'process.on("SIGTERM", () => { console.log("stopping"); process.exit(0) }); setInterval(() => {}, 1000)')], env)
    await run.waitForOutput('ready')
    const forced = await baton(['release', '--force', 'jobs/lost'], env)
    assert.equal(forced.code, 0, forced.stderr)
    const result = await run.finished
    assert.equal(result.code, 70, result.stderr)
    assert.match(result.stdout, /stopping/)
    assert.match(result.stderr, /lost: released by force.*stopped .* with SIGTERM/)
  })

  it('sends SIGKILL after --kill-grace to a command that ignores SIGTERM', async () => {
    const run = startBaton(['run', '--kill-grace', '200ms', 'jobs/stubborn', '--', ...nodeCommand(
      'process.on("SIGTERM", () => console.log("ignoring SIGTERM")); setInterval(() => {}, 1000)')], env)
    await run.waitForOutput('ready')
    await baton(['release', '--force', 'jobs/stubborn'], env)
    const result = await run.finished
    assert.equal(result.code, 70, result.stderr)
    assert.match(result.stdout, /ignoring SIGTERM/)
    assert.match(result.stderr, /with SIGKILL \(exit 137\)/)
  })

  it('never lets two invocations on one name overlap (a shared file shows no interleaving)', async () => {
    const file = join(scratch, 'shared.log')
    // Each command appends "<id> start", pauses, appends "<id> end"; an overlap would interleave them.
    const step = (id: string) => baton(['run', 'jobs/shared', '--', process.execPath, '-e', `
      const fs = require('node:fs')
      fs.appendFileSync(${JSON.stringify(file)}, '${id} start\\n')
      setTimeout(() => fs.appendFileSync(${JSON.stringify(file)}, '${id} end\\n'), 30)`], env)
    const loop = async (who: string) => {
      for (let i = 0; i < 6; i++) {
        const result = await step(`${who}${i}`)
        assert.equal(result.code, 0, result.stderr)
      }
    }
    await Promise.all([loop('a'), loop('b')])
    const lines = readFileSync(file, 'utf8').trim().split('\n')
    assert.equal(lines.length, 24)
    for (let i = 0; i < lines.length; i += 2) {
      const [id, what] = lines[i]!.split(' ')
      assert.equal(what, 'start', `line ${i + 1}: ${lines[i]}`)
      assert.equal(lines[i + 1], `${id} end`, `"${id}" was interleaved with another holder:\n${lines.join('\n')}`)
    }
  })

  it('holds a semaphore permit with --permits and a read lock with --read', async () => {
    const first = await holdWithRun('jobs/sem', '--permits', '2')
    const second = await baton(['run', '-n', '--permits', '2', 'jobs/sem', '--', 'true'], env)
    assert.equal(second.code, 0, second.stderr)
    const reader = await holdWithRun('jobs/rw', '--read')
    assert.equal((await baton(['run', '-n', '--read', 'jobs/rw', '--', 'true'], env)).code, 0)
    const writer = await baton(['run', '-n', '--write', 'jobs/rw', '--', 'true'], env)
    assert.equal(writer.code, 75)
    assert.match(writer.stderr, /held by \S+ \[[^\]]*\] \(read,/)
    first.process.kill('SIGTERM')
    reader.process.kill('SIGTERM')
    await Promise.all([first.finished, reader.finished])
  })

  it('takes several permits with --weight, names the weights when busy, and refuses a weight that can never fit', async () => {
    const heavy = await holdWithRun('jobs/weighted', '--permits', '4', '--weight', '3')
    const shown = await baton(['inspect', 'jobs/weighted'], env)
    assert.equal(shown.code, 0, shown.stderr)
    assert.match(shown.stdout, /permit ×3/)
    assert.equal((await baton(['run', '-n', '--permits', '4', 'jobs/weighted', '--', 'true'], env)).code, 0, 'one permit is left')
    const busy = await baton(['run', '-n', '--permits', '4', '--weight', '2', 'jobs/weighted', '--', 'true'], env)
    assert.equal(busy.code, 75)
    assert.match(busy.stderr, /\(permit × 3,/)
    for (const flags of [['--permits', '4', '--weight', '5'], ['--permits', '4', '--weight', '0'], ['--weight', '2']]) {
      const refused = await baton(['run', ...flags, 'jobs/weighted', '--', 'true'], env)
      assert.equal(refused.code, 2, `${flags.join(' ')}: ${refused.stderr}`)
      assert.match(refused.stderr, /--weight/)
    }
    heavy.process.kill('SIGTERM')
    await heavy.finished
  })

  it('refuses memory:// and a missing store with exit 2', async () => {
    const memory = await baton(['run', 'x', '--store', 'memory://', '--', 'true'], { BATON_URL: undefined })
    assert.equal(memory.code, 2)
    assert.match(memory.stderr, /^baton run: memory:\/\/ is a store inside this one process/)
    const none = await baton(['run', 'x', '--', 'true'], { BATON_URL: undefined })
    assert.equal(none.code, 2)
    assert.match(none.stderr, /no store given: pass --store URL or set BATON_URL/)
  })
})

/**
 * `baton ls`, `inspect`, `release --force`, `bench`, `--help` and usage
 * errors: the real binary against a real redis-server.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { connect } from '../../src/index.js'
import { startRedis, type RedisServer } from '../harness/servers.js'
import { baton, nodeCommand, startBaton, type Running } from './baton-cli.js'

let redis: RedisServer
let env: Record<string, string>
const holders: Running[] = []

interface LockJson {
  name: string
  kind: string
  permits: number
  holders: { owner: string; token: string; mode: string; expiresAt: number }[]
  waiters: { owner: string; mode: string }[]
  lastToken: string
}

before(async () => {
  redis = await startRedis()
  env = { BATON_URL: redis.url }
  // Locks in use for the listing tests: a mutex, two readers and a waiting writer.
  const hold = async (...args: string[]) => {
    const run = startBaton(['run', ...args, '--', ...nodeCommand('setInterval(() => {}, 1000)')], env)
    holders.push(run)
    await run.waitForOutput('ready')
  }
  await hold('orders/1', '--ttl', '40s')
  await hold('config', '--read')
  await hold('config', '--read')
  holders.push(startBaton(['run', 'config', '--write', '--', 'true'], env))
  for (;;) {
    const view = JSON.parse((await baton(['inspect', 'config', '--json'], env)).stdout) as LockJson
    if (view.waiters.length === 1) break
    await new Promise((r) => setTimeout(r, 20))
  }
})
after(async () => {
  for (const h of holders) h.process.kill('SIGTERM')
  await Promise.all(holders.map((h) => h.finished))
  await redis?.stop()
})

describe('baton ls / inspect / release --force', () => {
  it('ls prints a table of holders, modes, tokens, time left and waiters', async () => {
    const result = await baton(['ls'], env)
    assert.equal(result.code, 0, result.stderr)
    const lines = result.stdout.trim().split('\n')
    // HELD is "-" and WHO empty where the store keeps no description.
    assert.match(lines[0]!, /^NAME\s+KIND\s+MODE\s+TOKEN\s+HOLDER\s+HELD\s+LEFT\s+WAITING\s+WHO$/)
    assert.match(lines[1]!, /^config\s+rwlock\s+read\s+\d+\s+\S+\s+(-|\S+s)\s+[\d.]+s\s+1(\s+.*)?$/)
    assert.match(lines[2]!, /^\s+read\s+\d+\s+\S+\s+(-|\S+s)\s+[\d.]+s(\s+.*)?$/)
    assert.match(lines[3]!, /^orders\/1\s+mutex\s+exclusive\s+\d+\s+\S+\s+(-|\S+s)\s+[\d.]+s\s+0(\s+.*)?$/)
  })

  it('ls --json and --prefix give the locks for scripts, tokens as decimal strings', async () => {
    const all = JSON.parse((await baton(['ls', '--json'], env)).stdout) as LockJson[]
    assert.deepEqual(all.map((l) => l.name), ['config', 'orders/1'])
    const config = all[0]!
    assert.equal(config.kind, 'rwlock')
    assert.deepEqual(config.holders.map((h) => h.mode), ['read', 'read'])
    assert.deepEqual(config.waiters.map((w) => w.mode), ['write'])
    for (const h of config.holders) {
      assert.match(h.token, /^\d+$/)
      assert.ok(h.expiresAt > Date.now())
    }
    const orders = JSON.parse((await baton(['ls', '--prefix', 'orders/', '--json'], env)).stdout) as LockJson[]
    assert.deepEqual(orders.map((l) => l.name), ['orders/1'])
    const none = await baton(['ls', '--prefix', 'nothing/'], env)
    assert.equal(none.code, 0)
    assert.equal(none.stdout.trim(), 'no locks in use')
  })

  it("a lock server's own names (.baton/) are listed only when asked by prefix, and their values never printed", async () => {
    // A lock server sharing this store keeps its lease secret as the value of such a hold.
    const library = await connect(redis.url)
    const leadership = await library.election('.baton/lease-secret').campaign({ value: 'the-secret-value' })
    try {
      const all = JSON.parse((await baton(['ls', '--json'], env)).stdout) as LockJson[]
      assert.deepEqual(all.map((l) => l.name), ['config', 'orders/1'])
      const asked = await baton(['ls', '--prefix', '.baton/', '--json'], env)
      assert.deepEqual((JSON.parse(asked.stdout) as LockJson[]).map((l) => l.name), ['.baton/lease-secret'])
      const inspected = await baton(['inspect', '.baton/lease-secret', '--json'], env)
      for (const output of [asked.stdout, inspected.stdout]) {
        assert.doesNotMatch(output, /the-secret-value/)
        assert.match(output, /"value": ?"\(hidden\)"/)
      }
    } finally {
      await leadership.resign()
      await library.close()
    }
  })

  it('inspect shows one lock for people and for scripts; exit 3 when nobody holds it', async () => {
    const text = await baton(['inspect', 'config'], env)
    assert.equal(text.code, 0, text.stderr)
    assert.match(text.stdout, /^name:\s+config$/m)
    assert.match(text.stdout, /^kind:\s+rwlock$/m)
    assert.match(text.stdout, /^holders:\s+2$/m)
    assert.match(text.stdout, /^waiting:\s+1$/m)
    assert.match(text.stdout, /^\s+1\s+write\s+\S+\s+(-|\S+s)(\s+.*)?$/m)
    const json = JSON.parse((await baton(['inspect', 'orders/1', '--json'], env)).stdout) as LockJson
    assert.equal(json.name, 'orders/1')
    assert.equal(json.holders.length, 1)
    assert.equal(json.holders[0]!.token, json.lastToken)
    const free = await baton(['inspect', 'orders/2', '--json'], env)
    assert.equal(free.code, 3)
    assert.equal(free.stdout.trim(), 'null')
  })

  it('release --force frees a held name (exit 0), says when it was not held (exit 3), and wants --force', async () => {
    const holder = startBaton(['run', 'orders/9', '--', ...nodeCommand('setInterval(() => {}, 1000)')], env)
    await holder.waitForOutput('ready')
    const released = await baton(['release', '--force', 'orders/9'], env)
    assert.equal(released.code, 0, released.stderr)
    assert.match(released.stdout, /released "orders\/9"/)
    assert.equal((await holder.finished).code, 70)
    const again = await baton(['release', '--force', 'orders/9'], env)
    assert.equal(again.code, 3)
    const noForce = await baton(['release', 'orders/9'], env)
    assert.equal(noForce.code, 2)
    assert.match(noForce.stderr, /^baton release: --force is required/)
  })

  it('reports an unreachable store with exit 69', async () => {
    const result = await baton(['ls', '--store', 'redis://127.0.0.1:1'], {})
    assert.equal(result.code, 69, result.stderr)
    assert.match(result.stderr, /BACKEND_UNAVAILABLE/)
  })
})

describe('baton bench', () => {
  it('prints a plain summary when piped', async () => {
    const result = await baton(['bench', '--seconds', '300ms', '--contenders', '3'], env)
    assert.equal(result.code, 0, result.stderr)
    assert.match(result.stdout, /^baton bench: redis:\/\/127\.0\.0\.1:\d+, 0\.3s per part$/m)
    assert.match(result.stdout, /acquire\+release pairs\/s\s+[\d,]+\/s/)
    assert.match(result.stdout, /grants while another held it\s+0$/m)
    assert.doesNotMatch(result.stderr, /\r/, 'no progress line when not on a terminal')
  })
})

describe('baton --help and usage errors', () => {
  for (const command of ['run', 'ls', 'inspect', 'release', 'bench', 'demo', 'serve']) {
    it(`${command} --help shows usage, options and an example`, async () => {
      const result = await baton([command, '--help'], {})
      assert.equal(result.code, 0)
      assert.match(result.stdout, new RegExp(`^usage:\\s+baton ${command}`))
      assert.match(result.stdout, /examples?:\n/)
    })
  }

  it('baton --help lists every command', async () => {
    const result = await baton(['--help'], {})
    assert.equal(result.code, 0)
    for (const command of ['run', 'ls', 'inspect', 'release', 'bench']) assert.match(result.stdout, new RegExp(`^  ${command} `, 'm'))
  })

  const usageErrors: [string[], RegExp][] = [
    [['run', 'x', '--bogus', '--', 'true'], /^baton run: Unknown option '--bogus'$/m],
    [['run', 'x'], /^baton run: missing the command to run/],
    [['run'], /^baton run: missing the lock name: baton run <name> <command>$/m],
    [['run', '--', 'true'], /^baton run: missing the lock name/m],
    [['run', 'x', '--read', '--write', '--', 'true'], /--read and --write exclude each other/],
    [['run', 'x', '--ttl', 'soon', '--', 'true'], /--ttl must be a number of seconds or a duration like '250ms'/],
    [['run', 'x', '-E', '300', '--', 'true'], /--conflict-exit-code must be a whole number from 0 to 255/],
    [['inspect'], /^baton inspect: missing the lock name$/m],
    [['inspect', 'a', 'b'], /^baton inspect: unexpected argument "b"$/m],
    [['ls', '--prefix'], /^baton ls: Option '--prefix <value>' argument missing$/m],
    [['serve', '--bogus'], /^baton serve: Unknown option '--bogus'$/m],
    [['nosuch'], /^baton: unknown command "nosuch"/],
  ]
  for (const [args, message] of usageErrors) {
    it(`baton ${args.join(' ')} → exit 2 with one line and the usage`, async () => {
      const result = await baton(args, { BATON_URL: redis.url })
      assert.equal(result.code, 2, result.stderr)
      assert.match(result.stderr, message)
      assert.match(result.stderr, /usage:\s+baton/)
    })
  }
})

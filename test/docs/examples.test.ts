/**
 * The examples the README links, run as a user runs them against a real
 * `baton serve` with bearer tokens: Python with the standard library only,
 * and the curl recipe for shell scripts.
 */
import assert from 'node:assert/strict'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { after, before, describe, it } from 'node:test'
import { startBatonServer, tempDir, type BatonServer } from '../harness/baton-server.js'
import { ms } from '../harness/timing.js'
import { call, lockPath } from '../server/client.js'
import { runNode, waitUntil } from './processes.js'

const TOKEN = 'examples-test-token-0123456789abcdef'
const auth = { authorization: `Bearer ${TOKEN}` }
const example = (path: string) => fileURLToPath(new URL(`../../../examples/${path}`, import.meta.url))

let server: BatonServer
let dir: string

before(async () => {
  dir = tempDir('examples')
  const tokens = join(dir, 'tokens.json')
  writeFileSync(tokens, JSON.stringify([{ token: TOKEN, prefixes: ['examples/'] }]))
  server = await startBatonServer(['--tokens', tokens])
})
after(() => server.stop())

async function releaseWhenQueued(name: string, leaseToken: bigint, leaseId: string): Promise<void> {
  await waitUntil(async () => ((await call(server.base, 'GET', lockPath(name), undefined, auth)).body.waiters ?? []).length === 1)
  assert.equal((await call(server.base, 'DELETE', `/v1/leases/${leaseId}`, undefined, auth)).body.released, true, `${leaseToken}`)
}

describe('examples/python/baton_lock.py (standard library only)', () => {
  it('waits for the lock, renews it past its ttl, hands the token to the resource, releases', async () => {
    const name = `examples/python/${Math.random().toString(36).slice(2)}`
    const first = await call(server.base, 'POST', lockPath(name, '/acquire'), { ttl: '30s' }, auth)
    const ledger = join(dir, 'ledger.txt')
    // Held for two ttls: the lease lives only if the example renews it. A
    // ttl of seconds: renewals every third of it, which a loaded machine's
    // stalls (forks, a busy interpreter) do not miss.
    const ttlMs = ms(2000)
    const running = runNode(example('python/baton_lock.py'), [name, String((2 * ttlMs) / 1000)], {
      BATON_SERVER: server.base, BATON_TOKEN: TOKEN, BATON_TTL: `${ttlMs}ms`, LEDGER: ledger,
    }, 'python3')
    await releaseWhenQueued(name, BigInt(first.body.token), first.body.leaseId)
    const { code, lines, stderr } = await running
    assert.equal(code, 0, stderr)
    const granted = lines.find((l) => l.step === 'granted')!
    assert.ok(BigInt(granted.token) > BigInt(first.body.token))
    const done = lines.find((l) => l.step === 'released')!
    assert.equal(done.released, true, 'still held at the end: the renewals kept it')
    assert.ok(done.renewals >= 1)
    assert.equal(readFileSync(ledger, 'utf8').split(' ')[0], granted.token, 'the resource got the fencing token')
    assert.equal((await call(server.base, 'GET', lockPath(name), undefined, auth)).status, 404)
  })

  it('a wrong token is a typed error, not a hang', async () => {
    const { code, stderr } = await runNode(example('python/baton_lock.py'), ['examples/python/x', '0'], {
      BATON_SERVER: server.base, BATON_TOKEN: 'wrong-token-wrong-token-wrong',
    }, 'python3')
    assert.equal(code, 1)
    assert.match(stderr, /UNAUTHORIZED \(401\)/)
  })
})

describe('examples/curl.sh (a lock around a shell command)', () => {
  it('waits, runs the command with its fencing token while renewing, releases, passes the exit code on', async () => {
    const name = `examples/curl/${Math.random().toString(36).slice(2)} with space`
    const first = await call(server.base, 'POST', lockPath(name, '/acquire'), { ttl: '30s' }, auth)
    // Two ttls of seconds each: renewals (a curl every third of a ttl) keep it on a loaded machine too.
    const ttlMs = ms(2000)
    const seconds = (2 * ttlMs) / 1000
    const running = runNode(example('curl.sh'), [name, '--', 'sh', '-c', `echo "{\\"token\\":\\"$BATON_TOKEN\\"}"; sleep ${seconds}; exit 3`], {
      BATON_SERVER: server.base, BATON_AUTH: TOKEN, BATON_TTL: String(ttlMs),
    }, 'bash')
    await releaseWhenQueued(name, BigInt(first.body.token), first.body.leaseId)
    const { code, lines, stderr } = await running
    assert.equal(code, 3, stderr)
    assert.ok(BigInt(lines[0]!.token) > BigInt(first.body.token), 'the command got a newer fencing token')
    assert.match(stderr, /released ".*": true/, 'renewed past its ttl, so still held at the end')
    assert.equal((await call(server.base, 'GET', lockPath(name), undefined, auth)).status, 404)
  })

  it('held by someone else and --wait ran out: exit 75, the command never runs', async () => {
    const name = `examples/curl/busy-${Math.random().toString(36).slice(2)}`
    const first = await call(server.base, 'POST', lockPath(name, '/acquire'), { ttl: '30s' }, auth)
    const { code, stderr } = await runNode(example('curl.sh'), [name, '--', 'sh', '-c', 'echo ran'], {
      BATON_SERVER: server.base, BATON_AUTH: TOKEN, BATON_WAIT: '0',
    }, 'bash')
    assert.equal(code, 75)
    assert.match(stderr, /not acquired: 409/)
    await call(server.base, 'DELETE', `/v1/leases/${first.body.leaseId}`, undefined, auth)
  })
})

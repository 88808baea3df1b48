/**
 * clients/python (baton_client) against a real `baton serve`: installed with
 * pip offline as a user installs it, its unittest suite (unit tests, and
 * tests against this server and its /openapi.json), and the cross-process
 * cases driven through tests/agent.py: hand-over with a Node client on the
 * same name, loss after a server restart, and a Python process paused
 * (SIGSTOP) past its ttl that must see the loss before it acts.
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { after, before, describe, it } from 'node:test'
import { startBatonServer, tempDir, type BatonServer } from '../harness/baton-server.js'
import { ms } from '../harness/timing.js'
import { connect } from '../../src/index.js'
import { call, lockPath } from '../server/client.js'

const TOKEN = 'python-client-token-0123456789abcdef'
const auth = { authorization: `Bearer ${TOKEN}` }
const PACKAGE = fileURLToPath(new URL('../../../clients/python', import.meta.url))
const AGENT = join(PACKAGE, 'tests', 'agent.py')

let server: BatonServer
let dir: string
/** Where pip installed the package: the tests import this copy, not the source tree. */
let site: string

function run(command: string, args: string[], env: Record<string, string> = {}, cwd = PACKAGE) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: { ...process.env, ...env } })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    const timer = setTimeout(() => child.kill('SIGKILL'), ms(180_000))
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}

const pythonEnv = (base: string) => ({
  PYTHONPATH: site, BATON_CLIENT_INSTALLED: '1', PYTHONDONTWRITEBYTECODE: '1', BATON_SERVER: base, BATON_TOKEN: TOKEN,
})

/** A Python holder (tests/agent.py): one JSON command in, one JSON line out. */
class Agent {
  readonly child: ChildProcessWithoutNullStreams
  private readonly lines: Record<string, any>[] = []
  private waiting: ((line: Record<string, any>) => void) | undefined
  private stderr = ''

  constructor(base: string) {
    this.child = spawn('python3', [AGENT], { env: { ...process.env, ...pythonEnv(base) } })
    this.child.stderr.on('data', (d) => (this.stderr += d))
    createInterface({ input: this.child.stdout }).on('line', (text) => {
      const line = JSON.parse(text) as Record<string, any>
      if (this.waiting) {
        const deliver = this.waiting
        this.waiting = undefined
        deliver(line)
      } else this.lines.push(line)
    })
  }

  send(command: Record<string, unknown>): Promise<Record<string, any>> {
    const answer = new Promise<Record<string, any>>((resolve, reject) => {
      const queued = this.lines.shift()
      if (queued) return resolve(queued)
      const timer = setTimeout(() => reject(new Error(`agent gave no answer to ${JSON.stringify(command)}; stderr: ${this.stderr}`)), ms(60_000))
      this.waiting = (line) => {
        clearTimeout(timer)
        resolve(line)
      }
    })
    this.child.stdin.write(JSON.stringify(command) + '\n')
    return answer
  }

  async exit(): Promise<void> {
    this.child.kill('SIGCONT')
    if (this.child.exitCode !== null) return
    const gone = new Promise((resolve) => this.child.once('exit', resolve))
    this.child.stdin.end(JSON.stringify({ op: 'exit' }) + '\n')
    const timer = setTimeout(() => this.child.kill('SIGKILL'), ms(20_000))
    await gone
    clearTimeout(timer)
  }
}

async function waitUntil(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + ms(30_000)
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

const waitersOf = async (base: string, name: string) =>
  ((await call(base, 'GET', lockPath(name), undefined, auth)).body.waiters ?? []).length

const fresh = (label: string) => `py/${label}-${Math.random().toString(36).slice(2)}`

before(async () => {
  dir = tempDir('python-client')
  site = join(dir, 'site')
  const tokens = join(dir, 'tokens.json')
  writeFileSync(tokens, JSON.stringify([{ token: TOKEN, prefixes: ['py/'], rights: ['admin'] }]))
  server = await startBatonServer(['--tokens', tokens])
  // As a user installs it, with no index: the in-tree build backend needs nothing downloaded.
  const pip = await run('python3', ['-m', 'pip', 'install', '--no-index', '--disable-pip-version-check', '--target', site, PACKAGE])
  assert.equal(pip.code, 0, pip.stdout + pip.stderr)
  assert.ok(existsSync(join(site, 'baton_client', 'client.py')))
})
after(() => server.stop())

describe('clients/python (baton_client)', () => {
  it('its unittest suite passes, unit tests and tests against this server and its /openapi.json, none skipped', async () => {
    const { code, stderr } = await run('python3', ['-m', 'unittest', 'discover', '-v', '-s', 'tests'], {
      ...pythonEnv(server.base), BATON_TEST_SERVER: server.base, BATON_TEST_TOKEN: TOKEN,
    })
    assert.equal(code, 0, stderr)
    assert.match(stderr, /\nOK\n/)
    assert.doesNotMatch(stderr, /skipped/, 'every server test ran')
    assert.match(stderr, /test_a_wrong_token_is_unauthorized .* ok/)
    assert.match(stderr, /test_bad_names_are_invalid_argument .* ok/)
    assert.match(stderr, /test_forced_release_is_seen_as_lost .* ok/)
  })

  it('hands a lock over between a Python and a Node client on the same name, both ways', async () => {
    const name = fresh('handover')
    const python = new Agent(server.base)
    const baton = await connect(`http://:${TOKEN}@127.0.0.1:${server.port}`)
    try {
      const first = await python.send({ op: 'lock', name, ttl: 30, wait: 10 })
      assert.equal(first.event, 'granted', JSON.stringify(first))
      const nodeWaits = baton.mutex(name, { ttl: '30s' }).acquire({ wait: ms(30_000) })
      await waitUntil(async () => (await waitersOf(server.base, name)) === 1, 'the Node client waits in line')
      assert.deepEqual(await python.send({ op: 'release' }), { event: 'released', released: true })
      const nodeLease = await nodeWaits
      assert.ok(nodeLease.token > BigInt(first.token), 'Node got a newer fencing token')

      const pythonWaits = python.send({ op: 'lock', name, ttl: 30, wait: ms(30_000) / 1000 })
      await waitUntil(async () => (await waitersOf(server.base, name)) === 1, 'the Python client waits in line')
      await nodeLease.release()
      const second = await pythonWaits
      assert.equal(second.event, 'granted', JSON.stringify(second))
      assert.ok(BigInt(second.token) > nodeLease.token, 'Python got a newer fencing token')
      assert.equal((await python.send({ op: 'release' })).released, true)
    } finally {
      await baton.close()
      await python.exit()
    }
  })

  it('a Python process paused (SIGSTOP) past its ttl sees the lease lost before it acts', async () => {
    const name = fresh('paused')
    const resource = join(dir, `resource-${Math.random().toString(36).slice(2)}.txt`)
    const python = new Agent(server.base)
    try {
      const held = await python.send({ op: 'lock', name, ttl: ms(1000) / 1000, wait: 10 })
      assert.equal(held.event, 'granted', JSON.stringify(held))
      python.child.kill('SIGSTOP')
      // Granted to someone else only once the paused holder's lease ran out.
      const next = await call(server.base, 'POST', lockPath(name, '/acquire'), { ttl: '30s', wait: ms(30_000) }, auth)
      assert.equal(next.status, 200, JSON.stringify(next.body))
      assert.ok(BigInt(next.body.token) > BigInt(held.token))
      python.child.kill('SIGCONT')
      // Its first look after waking, whatever its renewal thread has or has not done yet.
      const acted = await python.send({ op: 'act', file: resource })
      assert.equal(acted.acted, false, JSON.stringify(acted))
      assert.equal(acted.code, 'LEASE_LOST')
      assert.equal(existsSync(resource) ? readFileSync(resource, 'utf8') : '', '', 'the stale holder never wrote')
      await call(server.base, 'DELETE', `/v1/leases/${next.body.leaseId}`, undefined, auth)
    } finally {
      await python.exit()
    }
  })

  it('a held lease is seen lost after the server restarts (its store forgot it)', async () => {
    const own = await startBatonServer()
    const python = new Agent(own.base)
    try {
      // A ttl longer than the restart: the loss is learnt from the restarted server
      // (the session is unknown there, and the lease turns out gone), not from the deadline.
      const ttl = ms(30_000) / 1000
      const held = await python.send({ op: 'lock', name: 'py/restart', ttl, wait: 10 })
      assert.equal(held.event, 'granted', JSON.stringify(held))
      await own.restart()
      const seen = await python.send({ op: 'wait_lost', timeout: 2 * ttl })
      assert.equal(seen.lost, true, JSON.stringify(seen))
      assert.match(seen.reason, /server no longer has it/)
      // A new holder on the restarted server: the Python lease is gone, not renewed back to life.
      const next = await call(own.base, 'POST', lockPath('py/restart', '/acquire'), { ttl: '30s' })
      assert.equal(next.status, 200, JSON.stringify(next.body))
    } finally {
      await python.exit()
      await own.stop()
    }
  })
})

/**
 * /openapi.json is the contract other languages build on: it lints clean with
 * redocly's recommended rules, offline, and a client generated from it by a
 * mainstream generator (openapi-typescript + openapi-fetch) compiles under
 * strict TypeScript and holds, renews and releases a lock on a real server.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { after, before, describe, it } from 'node:test'
import { startBatonServer, tempDir, type BatonServer } from '../harness/baton-server.js'
import { ms } from '../harness/timing.js'
import { call, lockPath } from './client.js'
import { OFFLINE_MARK } from './offline-guard.js'
import { runNode, waitUntil } from '../docs/processes.js'

const TOKEN = 'openapi-test-token-0123456789abcdef'
const require = createRequire(import.meta.url)
const GUARD = fileURLToPath(new URL('./offline-guard.js', import.meta.url))
const binOf = (pkg: string, bin: string) => join(require.resolve(`${pkg}/package.json`).replace(/package\.json$/, ''), bin)
const EXAMPLE = fileURLToPath(new URL('../../../examples/typescript/hold.ts', import.meta.url))

let server: BatonServer
let document: Record<string, any>
let documentFile: string

/** Runs a tool's bin with the offline guard loaded; fails the test if it tried to reach beyond loopback. */
interface Finished {
  readonly status: number | null
  readonly stdout: string
  readonly stderr: string
}

/**
 * Runs a node script to its end without blocking this process: a spawnSync
 * of a slow tsc (two minutes under load) froze the event loop past the lock
 * server's keep-alive timeout, and the next request went out on a socket the
 * server had closed meanwhile ("other side closed").
 */
function runScript(args: string[], env: Record<string, string> = {}): Promise<Finished> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], timeout: ms(120_000) })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
    child.on('error', reject)
    child.on('close', (status) => resolve({ status, stdout, stderr }))
  })
}

async function runOffline(bin: string, args: string[], env: Record<string, string> = {}): Promise<Finished> {
  const result = await runScript(['--import', GUARD, bin, ...args], env)
  assert.ok(!result.stderr.includes(OFFLINE_MARK), `${bin} tried to reach the network:\n${result.stderr}`)
  return result
}

before(async () => {
  const dir = tempDir('openapi')
  const tokens = join(dir, 'tokens.json')
  writeFileSync(tokens, JSON.stringify([{ token: TOKEN, rights: ['admin'] }]))
  server = await startBatonServer(['--tokens', tokens])
  const response = await fetch(`${server.base}/openapi.json`)
  document = await response.json() as Record<string, any>
  documentFile = join(dir, 'openapi.json')
  writeFileSync(documentFile, JSON.stringify(document, null, 2))
})
after(() => server.stop())

describe('the OpenAPI document', () => {
  it('redocly lint, recommended rules: no error, no warning, nothing fetched', async () => {
    // Telemetry off: redocly otherwise reports to its cloud on exit (the guard sees it try).
    const result = await runOffline(binOf('@redocly/cli', 'bin/cli.js'), ['lint', '--format=json', documentFile], {
      REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
    })
    const report = JSON.parse(result.stdout.slice(result.stdout.indexOf('{'))) as { totals: Record<string, number>; problems: unknown[] }
    assert.deepEqual(report.problems, [], JSON.stringify(report.problems, null, 2))
    assert.deepEqual({ errors: report.totals.errors, warnings: report.totals.warnings }, { errors: 0, warnings: 0 })
    assert.equal(result.status, 0, result.stderr)
  })

  it('what generators need: operationIds, named schemas, security, error codes, Retry-After, event stream, integers', () => {
    const operations = Object.entries(document.paths as Record<string, Record<string, any>>)
      .flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ path, method, op })))
    assert.ok(operations.length >= 14)
    const ids = operations.map((o) => o.op.operationId)
    assert.equal(new Set(ids).size, ids.length, 'operationIds are unique')
    assert.ok(ids.every((id) => typeof id === 'string' && /^[a-zA-Z][a-zA-Z0-9]*$/.test(id)))
    assert.ok(!Object.keys(document.components.schemas).some((name) => /^def-\d+$/.test(name)))
    for (const name of ['Error', 'Grant', 'Lock', 'Holder', 'Released']) assert.ok(document.components.schemas[name], name)
    const codes = document.components.schemas.Error.properties.error.properties.code.enum as string[]
    for (const code of ['LOCK_TIMEOUT', 'LEASE_LOST', 'UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND', 'TOO_MANY_WAITERS', 'BACKEND_UNAVAILABLE']) assert.ok(codes.includes(code), code)
    for (const { path, op } of operations) {
      const open = path === '/healthz' || path === '/readyz'
      assert.deepEqual(op.security, open ? [] : [{ bearer: [] }], `${path} security`)
      if (!open) assert.ok(op.responses['401'], `${path} declares 401`)
      for (const [status, response] of Object.entries(op.responses as Record<string, any>)) {
        if (status === '429' || status === '503') assert.ok(response.headers?.['Retry-After'], `${path} ${status} Retry-After`)
      }
    }
    const acquire = document.paths['/v1/locks/{name}/acquire'].post
    assert.equal(acquire.operationId, 'acquire')
    assert.equal(acquire.responses['200'].content['application/json'].schema.$ref, '#/components/schemas/Grant')
    assert.equal(acquire.responses['409'].content['application/json'].schema.$ref, '#/components/schemas/Error')
    assert.ok(document.paths['/v1/events'].get.responses['200'].content['text/event-stream'])
    const limit = document.paths['/v1/locks'].get.parameters.find((p: { name: string }) => p.name === 'limit')
    assert.equal(limit.schema.type, 'integer')
    assert.ok(document.servers.length > 0 && document.info.license.name)
  })

  it('limit is an integer on the wire too: numbers accepted, anything else 400', async () => {
    const auth = { authorization: `Bearer ${TOKEN}` }
    assert.equal((await call(server.base, 'GET', '/v1/locks?limit=5', undefined, auth)).status, 200)
    for (const bad of ['0', '1001', 'x', '1.5', '-1']) {
      const answer = await call(server.base, 'GET', `/v1/locks?limit=${bad}`, undefined, auth)
      assert.equal(answer.status, 400, bad)
      assert.equal(answer.body.error.code, 'INVALID_ARGUMENT')
    }
  })
})

describe('the statuses the server answers are the ones the document declares', () => {
  it('each error answer below is declared for its operation, with the Error schema and a code of the enum', async () => {
    const auth = { authorization: `Bearer ${TOKEN}` }
    const codes = document.components.schemas.Error.properties.error.properties.code.enum as string[]
    const name = `statuses/${Math.random().toString(36).slice(2)}`
    const held = await call(server.base, 'POST', lockPath(name, '/acquire'), { ttl: '30s' }, auth)
    const released = await call(server.base, 'POST', lockPath(`${name}-2`, '/acquire'), { ttl: '30s' }, auth)
    await call(server.base, 'DELETE', `/v1/leases/${released.body.leaseId}`, undefined, auth)
    const cases: [string, string, string, unknown, Record<string, string>, number][] = [
      ['/v1/locks/{name}/acquire', 'post', lockPath(name, '/acquire'), {}, auth, 409],
      ['/v1/locks/{name}/acquire', 'post', lockPath(name, '/acquire'), { ttl: 'soon' }, auth, 400],
      ['/v1/locks/{name}/acquire', 'post', lockPath(name, '/acquire'), {}, {}, 401],
      ['/v1/leases/{leaseId}/extend', 'post', `/v1/leases/${released.body.leaseId}/extend`, {}, auth, 410],
      ['/v1/leases/{leaseId}', 'delete', '/v1/leases/not-a-lease', undefined, auth, 404],
      ['/v1/leases/{leaseId}', 'delete', `/v1/leases/${'a'.repeat(5000)}`, undefined, auth, 414],
      ['/v1/locks/{name}', 'get', lockPath(`${name}-unused`), undefined, auth, 404],
      ['/v1/locks', 'get', '/v1/locks?limit=0', undefined, auth, 400],
      ['/v1/waits/{waitId}', 'delete', '/v1/waits/nobody-waits-with-this-id', undefined, auth, 404],
      ['/metrics', 'get', '/metrics', undefined, {}, 401],
    ]
    for (const [path, method, url, body, headers, status] of cases) {
      const answer = await call(server.base, method.toUpperCase(), url, body, headers)
      assert.equal(answer.status, status, `${method} ${url.slice(0, 60)}`)
      const declared = document.paths[path][method].responses[String(status)]
      assert.ok(declared, `${method} ${path} does not declare ${status}`)
      assert.equal(declared.content['application/json'].schema.$ref, '#/components/schemas/Error')
      assert.ok(codes.includes(answer.body.error.code), answer.body.error.code)
    }
    await call(server.base, 'DELETE', `/v1/leases/${held.body.leaseId}`, undefined, auth)
  })
})

describe('a client generated by openapi-typescript + openapi-fetch', () => {
  // One directory per test process: the other Node versions run this file at the same time.
  const dir = fileURLToPath(new URL(`../../generated-client/${process.pid}/`, import.meta.url))
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('compiles under strict TypeScript and holds, renews and releases a lock', async () => {
    // Inside dist/, so the compiled example finds openapi-fetch in the project's node_modules.
    rmSync(dir, { recursive: true, force: true })
    mkdirSync(dir, { recursive: true })
    const generated = await runOffline(binOf('openapi-typescript', 'bin/cli.js'), [documentFile, '-o', join(dir, 'baton-api.d.ts')])
    assert.equal(generated.status, 0, generated.stderr)
    copyFileSync(EXAMPLE, join(dir, 'hold.ts'))
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }))
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, types: ['node'], skipLibCheck: false, outDir: '.' },
      files: ['hold.ts', 'baton-api.d.ts'],
    }))
    const compiled = await runScript([binOf('typescript', 'bin/tsc'), '-p', dir])
    assert.equal(compiled.status, 0, `${compiled.stdout}${compiled.stderr}`)

    // Someone holds the lock first: the generated client waits, then gets a larger token.
    const name = `generated/${Math.random().toString(36).slice(2)}`
    const auth = { authorization: `Bearer ${TOKEN}` }
    const first = await call(server.base, 'POST', lockPath(name, '/acquire'), { ttl: '30s' }, auth)
    assert.equal(first.status, 200)
    const running = runNode(join(dir, 'hold.js'), [name], { BATON_SERVER: server.base, BATON_TOKEN: TOKEN })
    await waitUntil(async () => ((await call(server.base, 'GET', lockPath(name), undefined, auth)).body.waiters ?? []).length === 1)
    assert.equal((await call(server.base, 'DELETE', `/v1/leases/${first.body.leaseId}`, undefined, auth)).body.released, true)
    const { code, lines } = await running
    assert.equal(code, 0)
    const granted = lines.find((l) => l.step === 'granted')!
    assert.ok(BigInt(granted.token) > BigInt(first.body.token), 'a later grant has a larger fencing token')
    assert.equal(lines.find((l) => l.step === 'write')!.token, granted.token)
    assert.equal(lines.find((l) => l.step === 'renewed')!.token, granted.token)
    assert.equal(lines.find((l) => l.step === 'released')!.released, true)
    assert.equal((await call(server.base, 'GET', lockPath(name), undefined, auth)).status, 404, 'nothing left held')
  })

  it('without the token the generated client gets the typed UNAUTHORIZED error', async () => {
    const { code, stderr } = await runNode(join(dir, 'hold.js'), ['generated/no-token'], { BATON_SERVER: server.base, BATON_TOKEN: '' })
    assert.equal(code, 1)
    assert.match(stderr, /not acquired: UNAUTHORIZED/)
  })
})

/**
 * What a user installs (docs/install.md): the package as `npm pack` makes it,
 * installed into an empty project beside ioredis only, as a Redis user would.
 * That install stays within a budget, takes and releases a lock on a real
 * redis-server, says how to install a store client it lacks, type-checks a
 * TypeScript consumer without any other store's client, and its `baton`
 * command serves the API and the dashboard, and locks on every store, with
 * nothing else installed (the command carries its own packages).
 *
 * npm works from its local cache first (--prefer-offline): the repository's
 * own install has put every package this needs there.
 */
import assert from 'node:assert/strict'
import { execFile, spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { after, before, describe, it } from 'node:test'
import { startEtcd } from '../harness/etcd.js'
import { freePort } from '../harness/ports.js'
import { startPostgres } from '../harness/postgres.js'
import { startRedis, type RedisServer } from '../harness/servers.js'
import { ms } from '../harness/timing.js'
import { startZookeeper } from '../harness/zookeeper.js'

/** Library + Redis client, as installed: the aim, and what the test holds it to. */
const BUDGET = { packages: 15, bytes: 6 * 1024 * 1024 }

const REPO = fileURLToPath(new URL('../../../', import.meta.url))
const run = promisify(execFile)
const NPM_FLAGS = ['--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error']

let redis: RedisServer
let scratch: string
let project: string

/** The version the repository tested with, so npm finds it in its cache. */
const installedVersion = (name: string): string => JSON.parse(readFileSync(join(REPO, 'node_modules', name, 'package.json'), 'utf8')).version

before(async () => {
  redis = await startRedis()
  scratch = mkdtempSync(join(tmpdir(), 'baton-footprint-'))
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', scratch, ...NPM_FLAGS], { cwd: REPO })
  const tarball = join(scratch, (JSON.parse(stdout) as { filename: string }[])[0]!.filename)
  project = join(scratch, 'app')
  mkdirSync(project)
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }))
  await run('npm', ['install', tarball, `ioredis@${installedVersion('ioredis')}`, ...NPM_FLAGS], { cwd: project })
})

after(async () => {
  await redis?.stop()
  if (scratch) rmSync(scratch, { recursive: true, force: true })
})

/** Every installed package (a folder with a package.json under a node_modules), and the bytes of every file under node_modules. */
function footprint(nodeModules: string): { packages: string[]; bytes: number } {
  const packages: string[] = []
  let bytes = 0
  const walk = (dir: string, parent: string | undefined): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isFile()) bytes += statSync(path).size
      if (!entry.isDirectory()) continue
      const isPackage = parent !== undefined && !entry.name.startsWith('@') && !entry.name.startsWith('.')
      if (isPackage) packages.push(parent === '' ? entry.name : `${parent}/${entry.name}`)
      walk(path, entry.name === 'node_modules' ? '' : parent === '' && entry.name.startsWith('@') ? entry.name : undefined)
    }
  }
  walk(nodeModules, '')
  return { packages, bytes }
}

/** Runs an ES module in the project, as the application's code; its stdout is JSON. */
async function inProject(source: string): Promise<Record<string, unknown>> {
  const file = join(project, `check-${Date.now()}.mjs`)
  writeFileSync(file, source)
  const { stdout } = await run(process.execPath, [file, redis.url], { cwd: project, timeout: ms(30_000) })
  return JSON.parse(stdout) as Record<string, unknown>
}

describe('baton as installed beside ioredis only', () => {
  it('stays within the budget of packages and bytes', () => {
    const { packages, bytes } = footprint(join(project, 'node_modules'))
    console.log(`installed: ${packages.length} packages, ${(bytes / 1024 / 1024).toFixed(2)} MiB (${bytes} bytes): ${packages.sort().join(', ')}`)
    for (const client of ['pg', 'mysql2', 'etcd3', 'node-zookeeper-client', 'fastify', 'prom-client', '@grpc/grpc-js']) {
      assert.ok(!packages.includes(client), `${client} is installed, though only ioredis was asked for`)
    }
    assert.ok(packages.length <= BUDGET.packages, `${packages.length} packages, budget ${BUDGET.packages}: ${packages.join(', ')}`)
    assert.ok(bytes <= BUDGET.bytes, `${bytes} bytes, budget ${BUDGET.bytes}`)
  })

  it('holds a lock on Redis and releases it', async () => {
    const result = await inProject(`
import { connect } from 'baton'
const url = process.argv[2]
const [a, b] = [await connect(url), await connect(url)]
const lease = await a.mutex('install/footprint').acquire({ wait: '5s' })
const whileHeld = await b.mutex('install/footprint').tryAcquire()
const holders = (await b.inspect('install/footprint'))?.holders.map((h) => h.owner)
await lease.release()
const afterRelease = await b.mutex('install/footprint').tryAcquire()
await afterRelease?.release()
console.log(JSON.stringify({ owner: lease.owner, holders, takenWhileHeld: whileHeld !== null, takenAfterRelease: afterRelease !== null }))
await Promise.all([a.close(), b.close()])`)
    assert.deepEqual(result.holders, [result.owner])
    assert.equal(result.takenWhileHeld, false)
    assert.equal(result.takenAfterRelease, true)
  })

  it('fails connect() to a store whose client is not installed with INVALID_ARGUMENT naming the package to install', async () => {
    const result = await inProject(`
import { connect } from 'baton'
const outcomes = {}
for (const url of ['postgres://127.0.0.1:1/baton', 'mysql://127.0.0.1:1/baton', 'etcd://127.0.0.1:1', 'zk://127.0.0.1:1']) {
  outcomes[url] = await connect(url).then(() => 'connected', (e) => ({ code: e.code, message: e.message }))
}
console.log(JSON.stringify(outcomes))`)
    const expected = { 'postgres://127.0.0.1:1/baton': 'pg', 'mysql://127.0.0.1:1/baton': 'mysql2', 'etcd://127.0.0.1:1': 'etcd3', 'zk://127.0.0.1:1': 'node-zookeeper-client' }
    for (const [url, client] of Object.entries(expected)) {
      const outcome = result[url] as { code: string; message: string }
      assert.equal(outcome.code, 'INVALID_ARGUMENT', `${url}: ${JSON.stringify(outcome)}`)
      assert.ok(outcome.message.includes(`"${client}"`) && outcome.message.includes(`npm install ${client}`), outcome.message)
      assert.doesNotMatch(outcome.message, /Cannot find/)
    }
  })

  it('type-checks a TypeScript consumer without any store client types installed', async () => {
    writeFileSync(join(project, 'consumer.ts'), `
import { connect, isBatonError, type Baton, type ConnectOptions, type Lease, type MutexOptions } from 'baton'
const options: ConnectOptions = { connectTimeout: '2s', commandTimeout: 500 }
const mutexOptions: MutexOptions = { ttl: '10s' }
export async function critical(url: string): Promise<bigint> {
  const baton: Baton = await connect(url, options)
  try {
    const lease: Lease = await baton.mutex('orders/42', mutexOptions).acquire({ wait: '1s' })
    await lease.release()
    return lease.token
  } catch (error) {
    if (isBatonError(error, 'LOCK_TIMEOUT')) return -1n
    throw error
  } finally {
    await baton.close()
  }
}
`)
    // Node's own types come from the repository (an application on Node has them); nothing else does.
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({
      compilerOptions: {
        target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true,
        skipLibCheck: false, types: ['node'], typeRoots: [join(REPO, 'node_modules/@types')], lib: ['ES2023', 'esnext.disposable'],
      },
      files: ['consumer.ts'],
    }))
    const tsc = join(REPO, 'node_modules/typescript/bin/tsc')
    const result = await run(process.execPath, [tsc, '-p', 'tsconfig.json', '--listFiles'], { cwd: project }).catch((error: { stdout: string }) => {
      assert.fail(`tsc failed:\n${error.stdout}`)
    })
    const clientTypes = result.stdout.split('\n').filter((file) => /node_modules\/(pg|mysql2|etcd3|node-zookeeper-client|fastify|prom-client)\//.test(file))
    assert.deepEqual(clientTypes, [], 'the public types reach no store client or server package')
  })

  it('serves the API and the dashboard with `npx baton serve` from this install', async () => {
    const port = await freePort()
    const server = spawn('npx', ['--no-install', 'baton', 'serve', '--port', String(port), '--data-dir', mkdtempSync(join(tmpdir(), 'baton-serve-'))], {
      cwd: project, stdio: ['ignore', 'pipe', 'pipe'], detached: true,
    })
    let output = ''
    server.stdout!.on('data', (chunk: Buffer) => void (output += chunk.toString()))
    server.stderr!.on('data', (chunk: Buffer) => void (output += chunk.toString()))
    try {
      const deadline = Date.now() + ms(20_000)
      while (!output.includes('listening on')) {
        assert.ok(Date.now() < deadline && server.exitCode === null, `baton serve did not start:\n${output}`)
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      const base = `http://127.0.0.1:${port}`
      const health = await fetch(`${base}/healthz`)
      assert.equal(health.status, 200, await health.text())
      for (const path of ['/', '/dashboard/vendor/uplot.js', '/openapi.json', '/metrics']) {
        const response = await fetch(`${base}${path}`)
        assert.equal(response.status, 200, `${path}: ${response.status}`)
        await response.arrayBuffer()
      }
      const acquired = await fetch(`${base}/v1/locks/install/acquire`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ttl: '10s' }),
      })
      assert.equal(acquired.status, 200, await acquired.text())
    } finally {
      // npx runs the bin as its child: stop the whole group it leads.
      if (server.exitCode === null) {
        process.kill(-server.pid!, 'SIGTERM')
        await once(server, 'exit')
      }
    }
  })

  it('locks with `baton run` on PostgreSQL, etcd and ZooKeeper, whose clients the command carries', async () => {
    const started = await Promise.allSettled([startPostgres(), startEtcd(), startZookeeper()])
    const stores = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []))
    try {
      const failed = started.find((s) => s.status === 'rejected')
      if (failed) throw failed.reason
      const [postgres, etcd, zookeeper] = stores as [Awaited<ReturnType<typeof startPostgres>>, Awaited<ReturnType<typeof startEtcd>>, Awaited<ReturnType<typeof startZookeeper>>]
      for (const url of [postgres.url, etcd.url, `zk://${zookeeper.hosts}`]) {
        const bin = join(project, 'node_modules/.bin/baton')
        const result = await run(bin, ['run', '--store', url, 'install/vendored', '--', process.execPath, '-e', 'console.log("ran")'], {
          cwd: project, timeout: ms(30_000), env: { ...process.env, NODE_DISABLE_COMPILE_CACHE: '1' },
        }).catch((error: { stderr: string }) => assert.fail(`baton run on ${url}: ${error.stderr}`))
        assert.equal(result.stdout.trim(), 'ran', url)
      }
    } finally {
      await Promise.all(stores.map((store) => store.stop()))
    }
  })
})

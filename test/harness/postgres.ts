/**
 * A private PostgreSQL cluster for tests and benchmarks: initdb into a
 * temporary directory, `postgres` on a free loopback port with its unix
 * socket in that directory, run as the `postgres` user when we are root
 * (PostgreSQL refuses to run as root). The machine's own server on 5432 is
 * never touched. Stopped and killed by pid; removed at exit.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { chmodSync, chownSync, copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { ensureCommand } from './install.js'
import { freePort } from './ports.js'
import { ms } from './timing.js'
import { killAndWait, signalTree, sleep } from './process-tree.js'

const HOST = '127.0.0.1'
const SUPERUSER = 'postgres'
const MAX_PORT_ATTEMPTS = 5

export interface PostgresOptions {
  /** fsync off (the default) is fine for tests: data survives a server crash, not a machine crash. */
  readonly fsync?: boolean
  /** Extra `-c name=value` settings. */
  readonly settings?: Readonly<Record<string, string>>
  /** Serve TLS too (ssl = on) with this certificate and key (copied, owned by the server's user). */
  readonly tls?: { readonly cert: string; readonly key: string }
}

export interface PostgresServer {
  readonly port: number
  /** Superuser password (host connections use scram-sha-256). */
  readonly password: string
  /** postgres://postgres:<password>@127.0.0.1:<port>/postgres */
  readonly url: string
  readonly pid: number
  /** A URL for another user / database / query on this server. */
  urlFor(options?: { user?: string; password?: string; database?: string; query?: string }): string
  /** Runs SQL as the superuser (in `database`, default postgres) and returns the rows. */
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(sql: string, values?: unknown[], database?: string): Promise<R[]>
  /** SIGSTOP the server and every backend: connections stay open, nothing answers. */
  pause(): void
  resume(): void
  /** Immediate shutdown (SIGQUIT: no checkpoint, crash recovery at the next start), then start again after `downMs`. */
  restart(downMs?: number): Promise<void>
  /** Fast shutdown (SIGINT), SIGKILL if it lingers. */
  stop(): Promise<void>
}

const running = new Set<{ child: ChildProcess; dir: string }>()

process.on('exit', () => {
  for (const { child, dir } of running) {
    try {
      if (child.pid !== undefined && child.exitCode === null) process.kill(child.pid, 'SIGKILL')
    } catch {
      // gone already
    }
    rmSync(dir, { recursive: true, force: true })
  }
})

/** The newest PostgreSQL server binaries Debian installed, installing them when missing. */
async function serverBinaries(): Promise<string> {
  const find = () => {
    const root = '/usr/lib/postgresql'
    if (!existsSync(root)) return undefined
    const versions = readdirSync(root)
      .filter((v) => existsSync(join(root, v, 'bin', 'initdb')) && existsSync(join(root, v, 'bin', 'postgres')))
      .sort((a, b) => Number(b) - Number(a))
    return versions[0] === undefined ? undefined : join(root, versions[0], 'bin')
  }
  let bin = find()
  if (!bin) {
    await ensureCommand('pg_ctlcluster', 'postgresql')
    bin = find()
  }
  if (!bin) throw new Error('no PostgreSQL server under /usr/lib/postgresql/*/bin; install the Debian package "postgresql"')
  return bin
}

/** uid and gid of the postgres user when we are root (the server refuses root), else nothing. */
function serverIdentity(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined
  const entry = readFileSync('/etc/passwd', 'utf8').split('\n').find((line) => line.startsWith(`${SUPERUSER}:`))
  if (!entry) throw new Error('running as root, but there is no "postgres" user to run the server as (install the Debian package "postgresql")')
  const [, , uid, gid] = entry.split(':')
  return { uid: Number(uid), gid: Number(gid) }
}

export async function startPostgres(options: PostgresOptions = {}): Promise<PostgresServer> {
  const bin = await serverBinaries()
  const identity = serverIdentity()
  const dir = mkdtempSync(join(tmpdir(), 'baton-pg-'))
  const data = join(dir, 'data')
  const password = `pw-${Math.random().toString(36).slice(2, 10)}`
  writeFileSync(join(dir, 'pwfile'), `${password}\n`)
  if (identity) {
    chownSync(dir, identity.uid, identity.gid)
    chownSync(join(dir, 'pwfile'), identity.uid, identity.gid)
  }
  const init = spawnSync(join(bin, 'initdb'), [
    '-D', data, '-U', SUPERUSER, `--pwfile=${join(dir, 'pwfile')}`, '-E', 'UTF8', '--locale=C',
    '--auth-local=trust', '--auth-host=scram-sha-256', '--no-instructions',
  ], { ...identity, encoding: 'utf8', timeout: ms(60_000) })
  if (init.status !== 0) {
    rmSync(dir, { recursive: true, force: true })
    throw new Error(`initdb failed (${init.status ?? init.signal}): ${init.stderr || init.error?.message}`)
  }

  const tls: Record<string, string> = {}
  if (options.tls) {
    // The server refuses a key others can read; it must be its own user's.
    for (const [file, from] of [['server.crt', options.tls.cert], ['server.key', options.tls.key]] as const) {
      copyFileSync(from, join(dir, file))
      chmodSync(join(dir, file), 0o600)
      if (identity) chownSync(join(dir, file), identity.uid, identity.gid)
    }
    Object.assign(tls, { ssl: 'on', ssl_cert_file: join(dir, 'server.crt'), ssl_key_file: join(dir, 'server.key') })
  }
  const settings: Record<string, string> = {
    listen_addresses: HOST,
    unix_socket_directories: dir,
    fsync: options.fsync ? 'on' : 'off',
    full_page_writes: options.fsync ? 'on' : 'off',
    max_connections: '300',
    ...tls,
    ...options.settings,
  }
  const args = (port: number) => ['-D', data, '-p', String(port), ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`])]
  const entry = { child: undefined as unknown as ChildProcess, dir }

  const launch = async (port: number): Promise<void> => {
    const child = spawn(join(bin, 'postgres'), args(port), { ...identity, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    for (const stream of [child.stdout, child.stderr]) {
      stream.on('data', (chunk: Buffer) => {
        output = (output + chunk.toString()).slice(-4000)
      })
      ;(stream as unknown as { unref(): void }).unref()
    }
    child.unref()
    entry.child = child
    running.add(entry)
    const deadline = Date.now() + ms(30_000)
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw Object.assign(new Error(`postgres on port ${port} exited (${child.exitCode ?? child.signalCode}):\n${output}`), {
          portInUse: /could not bind|Address already in use/i.test(output),
        })
      }
      if (await answers(port, password)) return
      if (Date.now() > deadline) throw new Error(`postgres on port ${port} not ready after ${ms(30_000)} ms:\n${output}`)
      await sleep(50)
    }
  }

  let port = 0
  for (let attempt = 1; ; attempt++) {
    port = await freePort()
    try {
      await launch(port)
      break
    } catch (error) {
      await killAndWait(entry.child, 'SIGKILL')
      if (!(error as { portInUse?: boolean }).portInUse || attempt >= MAX_PORT_ATTEMPTS) {
        running.delete(entry)
        rmSync(dir, { recursive: true, force: true })
        throw error
      }
    }
  }

  const urlFor: PostgresServer['urlFor'] = ({ user = SUPERUSER, password: pass = password, database = 'postgres', query } = {}) =>
    `postgres://${encodeURIComponent(user)}:${encodeURIComponent(pass)}@${HOST}:${port}/${database}${query ? `?${query}` : ''}`

  return {
    port,
    password,
    url: urlFor(),
    get pid() {
      return entry.child.pid ?? -1
    },
    urlFor,
    async query(sql, values, database = 'postgres') {
      const client = new pg.Client({ host: HOST, port, user: SUPERUSER, password, database })
      await client.connect()
      try {
        return (await client.query(sql, values)).rows
      } finally {
        await client.end()
      }
    },
    pause: () => signalTree(entry.child, 'SIGSTOP'),
    resume: () => signalTree(entry.child, 'SIGCONT'),
    async restart(downMs = 0) {
      await killAndWait(entry.child, 'SIGQUIT')
      if (downMs > 0) await sleep(downMs)
      await launch(port)
    },
    async stop() {
      signalTree(entry.child, 'SIGCONT')
      await killAndWait(entry.child, 'SIGINT')
      running.delete(entry)
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

async function answers(port: number, password: string): Promise<boolean> {
  const client = new pg.Client({ host: HOST, port, user: SUPERUSER, password, database: 'postgres', connectionTimeoutMillis: 1000 })
  client.on('error', () => {})
  try {
    await client.connect()
    await client.query('SELECT 1')
    return true
  } catch {
    return false
  } finally {
    await client.end().catch(() => {})
  }
}

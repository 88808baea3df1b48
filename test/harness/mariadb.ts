/**
 * A private MariaDB server for tests and benchmarks: `mariadb-install-db`
 * into a temporary directory, `mariadbd` on a free loopback port with its
 * socket in that directory, a password user `baton` for clients (root has
 * no password and is for the harness only). The machine's own server on
 * 3306 is never touched. Paused, killed and stopped by pid; removed at exit.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import mysql from 'mysql2/promise'
import { ensureCommand } from './install.js'
import { freePort } from './ports.js'
import { killAndWait, signalTree, sleep } from './process-tree.js'
import { ms } from './timing.js'

const HOST = '127.0.0.1'
const USER = 'baton'
const DATABASE = 'baton'
const MAX_PORT_ATTEMPTS = 5

export interface MariadbServer {
  readonly port: number
  /** The password of user `baton`. */
  readonly password: string
  /** mysql://baton:<password>@127.0.0.1:<port>/baton */
  readonly url: string
  readonly pid: number
  /** Runs SQL as root and returns the rows. */
  query<R = Record<string, unknown>>(sql: string, values?: unknown[]): Promise<R[]>
  /** SIGSTOP the server: connections stay open, nothing answers. */
  pause(): void
  resume(): void
  /** kill -9 (crash recovery at the next start, data kept), then start again after `downMs`. */
  restart(downMs?: number): Promise<void>
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

/** One initialised data directory per process, copied for each server (install-db takes seconds). */
let template: string | undefined

async function initialisedDataDir(): Promise<string> {
  if (template && existsSync(template)) return template
  if (!existsSync('/usr/sbin/mariadbd')) await ensureCommand('mariadb-install-db', 'mariadb-server')
  const dir = mkdtempSync(join(tmpdir(), 'baton-mariadb-template-'))
  const init = spawnSync('mariadb-install-db', [
    '--no-defaults', `--datadir=${join(dir, 'data')}`, '--auth-root-authentication-method=normal', '--skip-test-db',
    ...(process.getuid?.() === 0 ? ['--user=root'] : []),
  ], { encoding: 'utf8', timeout: ms(120_000) })
  if (init.status !== 0) {
    rmSync(dir, { recursive: true, force: true })
    throw new Error(`mariadb-install-db failed (${init.status ?? init.signal}): ${init.stderr || init.error?.message}`)
  }
  running.add({ child: { pid: undefined, exitCode: 0 } as unknown as ChildProcess, dir })
  template = join(dir, 'data')
  return template
}

export interface MariadbOptions {
  /** Flush the log to disk at every commit (the server's default; the benchmark's setting). */
  readonly durable?: boolean
}

export async function startMariadb(options: MariadbOptions = {}): Promise<MariadbServer> {
  const dir = mkdtempSync(join(tmpdir(), 'baton-mariadb-'))
  const data = join(dir, 'data')
  cpSync(await initialisedDataDir(), data, { recursive: true })
  const password = `pw-${Math.random().toString(36).slice(2, 10)}`
  const args = (port: number) => [
    '--no-defaults', `--datadir=${data}`, `--port=${port}`, `--bind-address=${HOST}`, `--socket=${join(dir, 'sock')}`,
    `--pid-file=${join(dir, 'pid')}`, '--skip-name-resolve', '--skip-log-bin', '--innodb-buffer-pool-size=32M',
    '--max-connections=500',
    // The log reaches the OS at each commit and the disk once a second: a
    // killed server (what the tests do) loses nothing, a machine crash would
    // (as the PostgreSQL harness's fsync=off), and commits do not queue on a
    // shared machine's disk.
    `--innodb-flush-log-at-trx-commit=${options.durable ? 1 : 2}`, '--innodb-lock-wait-timeout=10', '--performance-schema=off',
    ...(process.getuid?.() === 0 ? ['--user=root'] : []),
  ]
  const entry = { child: undefined as unknown as ChildProcess, dir }

  const launch = async (port: number): Promise<void> => {
    const child = spawn('/usr/sbin/mariadbd', args(port), { stdio: ['ignore', 'pipe', 'pipe'] })
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
        throw Object.assign(new Error(`mariadbd on port ${port} exited (${child.exitCode ?? child.signalCode}):\n${output}`), {
          portInUse: /Address already in use|Can't start server: Bind/i.test(output),
        })
      }
      if (await answers(port)) return
      if (Date.now() > deadline) throw new Error(`mariadbd on port ${port} not ready after ${ms(30_000)} ms:\n${output}`)
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

  const query = async <R>(sql: string, values?: unknown[]): Promise<R[]> => {
    const connection = await mysql.createConnection({ host: HOST, port, user: 'root', multipleStatements: true })
    try {
      const [rows] = await connection.query(sql, values)
      return rows as R[]
    } finally {
      await connection.end().catch(() => {})
    }
  }
  await query(
    `CREATE DATABASE ${DATABASE}; CREATE USER '${USER}'@'%' IDENTIFIED BY '${password}'; ` +
      `GRANT ALL ON ${DATABASE}.* TO '${USER}'@'%'`,
  )

  return {
    port,
    password,
    url: `mysql://${USER}:${encodeURIComponent(password)}@${HOST}:${port}/${DATABASE}`,
    get pid() {
      return entry.child.pid ?? -1
    },
    query,
    pause: () => signalTree(entry.child, 'SIGSTOP'),
    resume: () => signalTree(entry.child, 'SIGCONT'),
    async restart(downMs = 0) {
      signalTree(entry.child, 'SIGCONT')
      await killAndWait(entry.child, 'SIGKILL')
      if (downMs > 0) await sleep(downMs)
      await launch(port)
    },
    async stop() {
      signalTree(entry.child, 'SIGCONT')
      await killAndWait(entry.child, 'SIGTERM')
      running.delete(entry)
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

async function answers(port: number): Promise<boolean> {
  try {
    const connection = await mysql.createConnection({ host: HOST, port, user: 'root', connectTimeout: 1000 })
    await connection.query('SELECT 1')
    await connection.end()
    return true
  } catch {
    return false
  }
}

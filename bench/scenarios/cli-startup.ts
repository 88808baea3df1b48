/**
 * `baton run name -- true` wall time on the Redis store, beside `flock`,
 * `etcdctl lock name -- true` (against an etcd started here, when etcd is
 * installed) and a bare `node -e 0`: the price of taking a fleet-wide lock
 * around a shell command. Each command runs many times, interleaved, and the
 * median counts.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { findOnPath } from '../../test/harness/install.js'
import { freePort } from '../../test/harness/ports.js'
import { fmtMs, fmtRatio, median, table } from '../report.js'
import type { BenchContext, Scenario, ScenarioResult } from '../types.js'
import { sleep } from '../util.js'

/** The bin the package ships: the bundle of scripts/bundle-cli.mjs. */
const BATON_BIN = fileURLToPath(new URL('../../cli/baton.js', import.meta.url))
/** The same command from tsc's output, module by module, for what the bundle saves. */
const UNBUNDLED_BIN = fileURLToPath(new URL('../../src/cli/bin.js', import.meta.url))
const TARGET_RATIO = 1.5

/** Wall time of one run of `argv`, ms; rejects when it exits non-zero. */
function timeOnce(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'], env })
    let stderr = ''
    child.stderr!.on('data', (chunk: Buffer) => void (stderr += chunk.toString()))
    child.once('error', reject)
    child.once('exit', (code) => {
      const took = performance.now() - started
      if (code === 0) resolve(took)
      else reject(new Error(`${argv.join(' ')} exited ${code}: ${stderr.trim().split('\n')[0]}`))
    })
  })
}

interface Etcd {
  endpoint: string
  stop(): Promise<void>
}

/** A single-node etcd on free loopback ports in a scratch directory, or undefined when etcd is not installed. */
async function startEtcd(): Promise<Etcd | undefined> {
  if (!(await findOnPath('etcd')) || !(await findOnPath('etcdctl'))) return undefined
  const dir = mkdtempSync(join(tmpdir(), 'baton-bench-etcd-'))
  const [client, peer] = [await freePort(), await freePort()]
  const endpoint = `http://127.0.0.1:${client}`
  const etcd = spawn('etcd', [
    '--data-dir', dir, '--name', 'bench',
    '--listen-client-urls', endpoint, '--advertise-client-urls', endpoint,
    '--listen-peer-urls', `http://127.0.0.1:${peer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peer}`,
    '--initial-cluster', `bench=http://127.0.0.1:${peer}`, '--log-level', 'error',
  ], { stdio: 'ignore' })
  const stop = async () => {
    etcd.kill('SIGKILL')
    if (etcd.exitCode === null) await new Promise((r) => etcd.once('exit', r))
    rmSync(dir, { recursive: true, force: true })
  }
  for (let i = 0; i < 100; i++) {
    try {
      await timeOnce(['etcdctl', '--endpoints', endpoint, 'endpoint', 'health'], process.env)
      return { endpoint, stop }
    } catch {
      await sleep(100)
    }
  }
  await stop()
  throw new Error('etcd did not become healthy within 10 s')
}

export const cliStartup: Scenario = {
  id: 'cli-startup',
  title: '12. `baton run name -- true`: wall time of one locked shell command',
  async run(ctx: BenchContext): Promise<ScenarioResult> {
    const scratch = mkdtempSync(join(tmpdir(), 'baton-bench-flock-'))
    const etcd = await startEtcd().catch((error: unknown) => {
      ctx.log(`  etcd: ${error instanceof Error ? error.message : String(error)}`)
      return undefined
    })
    // The bin's code cache goes to a scratch XDG_CACHE_HOME: the warm-up run writes it, as a user's first run would.
    const env = { ...process.env, BATON_URL: ctx.redisUrl, ETCDCTL_API: '3', XDG_CACHE_HOME: scratch, NODE_DISABLE_COMPILE_CACHE: '' }
    const contenders: [label: string, argv: string[], extraEnv?: NodeJS.ProcessEnv][] = [
      ['node -e 0 (bare Node start-up)', [process.execPath, '-e', '0']],
      ['baton run name -- true (Redis)', [process.execPath, BATON_BIN, 'run', 'bench/cli-startup', '--', 'true']],
      ['the same, without its code cache (a first run)', [process.execPath, BATON_BIN, 'run', 'bench/cli-startup', '--', 'true'], { NODE_DISABLE_COMPILE_CACHE: '1' }],
      ['the same, unbundled (dist/src/cli/bin.js)', [process.execPath, UNBUNDLED_BIN, 'run', 'bench/cli-startup', '--', 'true']],
      ['flock file true (one machine)', ['flock', join(scratch, 'lock'), 'true']],
      ...(etcd ? [['etcdctl lock name -- true (etcd)', ['etcdctl', '--endpoints', etcd.endpoint, 'lock', 'bench/cli-startup', 'true']] as [string, string[]]] : []),
    ]
    const rounds = ctx.pick(25, 6)
    const times = new Map<string, number[]>(contenders.map(([label]) => [label, []]))
    const failures: string[] = []
    try {
      for (const [, argv, extra] of contenders) await timeOnce(argv, { ...env, ...extra }).catch(() => undefined) // warm the page cache
      for (let round = 0; round < rounds; round++) {
        for (const [label, argv, extra] of contenders) {
          try {
            times.get(label)!.push(await timeOnce(argv, { ...env, ...extra }))
          } catch (error) {
            failures.push(`${label}: ${error instanceof Error ? error.message : String(error)}`)
          }
        }
      }
    } finally {
      await etcd?.stop()
      rmSync(scratch, { recursive: true, force: true })
    }
    const medians = new Map([...times].map(([label, t]) => [label, median(t)]))
    const node = medians.get(contenders[0]![0])!
    const batonLabel = contenders[1]![0]
    const baton = medians.get(batonLabel)!
    const ratio = baton / node
    const rows = contenders.map(([label]) => {
      const t = times.get(label)!
      return [label, fmtMs(medians.get(label)!), `${fmtMs(Math.min(...t))} – ${fmtMs(Math.max(...t))}`, fmtRatio(medians.get(label)! / node), String(t.length)]
    })
    const markdown = [
      `## ${this.title}`,
      '',
      `Each command ${rounds} times, interleaved; wall time from spawn to exit. Target: baton ≤ ${TARGET_RATIO} × a bare \`node -e 0\` in the same run.`
      + (etcd ? '' : ' (etcd is not installed: no etcdctl row.)'),
      '',
      table(['command', 'median', 'range', '× node -e 0', 'runs'], rows),
      ...(failures.length ? ['', `Failures: ${[...new Set(failures)].join('; ')}`] : []),
    ].join('\n')
    return {
      markdown,
      summary: [{
        figure: '`baton run name -- true` wall time (Redis)',
        baton: fmtMs(baton),
        other: `node -e 0 ${fmtMs(node)}`,
        ratio: fmtRatio(ratio),
        target: `≤ ${TARGET_RATIO}×`,
        met: Number.isFinite(ratio) ? ratio <= TARGET_RATIO : undefined,
      }],
    }
  },
}

/**
 * Client CPU per uncontended acquire+release pair, baton against the raw
 * baseline and the peers, on one redis-server (nodes = 1) or on N
 * independent redis-servers as `redlock://` (nodes > 1), all started by this
 * tool; also the Redis-side µs and calls per pair, summed over the nodes
 * (INFO commandstats). CPU time (process.cpuUsage) is far less sensitive to a
 * loaded machine than throughput, so it is the figure to watch when tuning a
 * hot path.
 *
 *   node dist/bench/cpu-per-pair.js [pairs=20000] [rounds=5] [peer,peer,...] [nodes=1]
 *   node dist/bench/cpu-per-pair.js 5000 3 baton,redlock 3      # Redlock over 3 nodes
 *   node --cpu-prof dist/bench/cpu-per-pair.js 50000 1 baton    # profile one
 *   BENCH_COMMANDS=1 node dist/bench/cpu-per-pair.js ...          # and each Redis command's share
 */
import { Redis } from 'ioredis'
import { startRedlock } from '../test/harness/redlock.js'
import { startRedis, stopAll } from '../test/harness/servers.js'
import { PEERS, type PeerId } from './peers/index.js'
import { runTag } from './util.js'

const pairs = Number(process.argv[2] ?? 20_000)
const rounds = Number(process.argv[3] ?? 5)
const nodes = Number(process.argv[5] ?? 1)
const ids = (process.argv[4] ?? (nodes > 1 ? 'baton,redlock' : 'raw,baton,redis-semaphore,redlock')).split(',') as PeerId[]

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}

type CommandStats = Map<string, { calls: number; usec: number }>

/**
 * Σ over the nodes of usec and calls, from INFO commandstats (the INFO calls
 * themselves left out), and each command's own figures. Commands a script
 * calls are counted both by themselves and inside the script's usec, so the
 * totals count them twice, as every earlier figure did.
 */
async function redisSide(clients: Redis[]): Promise<{ usec: number; calls: number; commands: CommandStats }> {
  let usec = 0
  let calls = 0
  const commands: CommandStats = new Map()
  for (const client of clients) {
    const info = await client.info('commandstats')
    for (const m of info.matchAll(/^cmdstat_([\w|]+):calls=(\d+),usec=(\d+)/gm)) {
      if (m[1] === 'info') continue
      calls += Number(m[2])
      usec += Number(m[3])
      const seen = commands.get(m[1]!) ?? { calls: 0, usec: 0 }
      commands.set(m[1]!, { calls: seen.calls + Number(m[2]), usec: seen.usec + Number(m[3]) })
    }
  }
  return { usec, calls, commands }
}

/** Per pair, the commands whose counts moved between two readings (BENCH_COMMANDS=1). */
function commandShares(before: CommandStats, after: CommandStats, pairs: number): string {
  return [...after].flatMap(([name, a]) => {
    const b = before.get(name) ?? { calls: 0, usec: 0 }
    const calls = (a.calls - b.calls) / pairs
    return calls > 0 ? [`${name} ${calls.toFixed(2)}×/${((a.usec - b.usec) / pairs).toFixed(1)}µs`] : []
  }).join(', ')
}

const redlock = nodes > 1 ? await startRedlock(nodes) : undefined
const url = redlock ? redlock.url : (await startRedis()).url
const ports = redlock ? redlock.nodes.map((n) => n.port) : [Number(new URL(url).port)]
const admin = ports.map((port) => new Redis(port, '127.0.0.1'))
try {
  const contenders = await Promise.all(ids.map((id) =>
    PEERS[id].create({ url, ttlMs: 10_000, waitMs: 30_000, profile: 'default', permits: 1 })))
  const series = () => new Map<PeerId, number[]>(ids.map((id) => [id, []]))
  const cpu = series()
  const rate = series()
  const server = series()
  const calls = series()
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < ids.length; i++) {
      const at = (i + round) % ids.length
      const id = ids[at]!
      const contender = contenders[at]!
      const key = `cpu:${runTag}:${id}`
      for (let n = 0; n < 500; n++) await (await contender.acquire(key))() // warm-up
      const side = await redisSide(admin)
      const wall = performance.now()
      const before = process.cpuUsage()
      for (let n = 0; n < pairs; n++) await (await contender.acquire(key))()
      const used = process.cpuUsage(before)
      const elapsed = performance.now() - wall
      const after = await redisSide(admin)
      cpu.get(id)!.push((used.user + used.system) / pairs)
      rate.get(id)!.push(pairs / (elapsed / 1000))
      server.get(id)!.push((after.usec - side.usec) / pairs)
      calls.get(id)!.push((after.calls - side.calls) / pairs)
      if (process.env.BENCH_COMMANDS) console.log(`${id} round ${round}: ${commandShares(side.commands, after.commands, pairs)}`)
    }
  }
  const rawCpu = cpu.has('raw') ? median(cpu.get('raw')!) : NaN
  const rawRate = rate.has('raw') ? median(rate.get('raw')!) : NaN
  console.log(`${redlock ? `redlock:// over ${nodes} nodes` : 'one redis-server'}, ${pairs} pairs × ${rounds} rounds (medians)`)
  console.log('| contender | client CPU µs/pair | pairs/s | × raw (cpu) | Redis µs/pair (Σ nodes) | Redis calls/pair |')
  console.log('|---|--:|--:|--:|--:|--:|')
  for (const id of ids) {
    const c = median(cpu.get(id)!)
    const r = median(rate.get(id)!)
    const vsRaw = Number.isNaN(rawRate) ? '' : `${(r / rawRate).toFixed(2)} (${(c / rawCpu).toFixed(2)})`
    console.log(`| ${id} | ${c.toFixed(1)} | ${Math.round(r)} | ${vsRaw} | ${median(server.get(id)!).toFixed(1)} | ${median(calls.get(id)!).toFixed(2)} |`)
  }
  await Promise.all(contenders.map((c) => c.close()))
} finally {
  admin.forEach((a) => a.disconnect())
  await redlock?.stop()
  await stopAll()
}

/**
 * Client CPU per uncontended acquire+release pair, baton against the raw
 * baseline (and peers), on one redis-server this tool starts. CPU time
 * (process.cpuUsage) is far less sensitive to a loaded machine than
 * throughput, so it is the figure to watch when tuning the hot path.
 *
 *   node dist/bench/cpu-per-pair.js [pairs=20000] [rounds=5] [peer,peer,...]
 *   node --cpu-prof dist/bench/cpu-per-pair.js 50000 1 baton   # profile one
 */
import { startRedis, stopAll } from '../test/harness/servers.js'
import { PEERS, type PeerId } from './peers/index.js'
import { runTag } from './util.js'

const pairs = Number(process.argv[2] ?? 20_000)
const rounds = Number(process.argv[3] ?? 5)
const ids = (process.argv[4] ?? 'raw,baton,redis-semaphore,redlock').split(',') as PeerId[]

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}

const redis = await startRedis()
try {
  const contenders = await Promise.all(ids.map((id) =>
    PEERS[id].create({ url: redis.url, ttlMs: 10_000, waitMs: 30_000, profile: 'default', permits: 1 })))
  const cpu = new Map<PeerId, number[]>(ids.map((id) => [id, []]))
  const rate = new Map<PeerId, number[]>(ids.map((id) => [id, []]))
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < ids.length; i++) {
      const at = (i + round) % ids.length
      const id = ids[at]!
      const contender = contenders[at]!
      const key = `cpu:${runTag}:${id}`
      for (let n = 0; n < 500; n++) await (await contender.acquire(key))() // warm-up
      const wall = performance.now()
      const before = process.cpuUsage()
      for (let n = 0; n < pairs; n++) await (await contender.acquire(key))()
      const used = process.cpuUsage(before)
      const elapsed = performance.now() - wall
      cpu.get(id)!.push((used.user + used.system) / pairs)
      rate.get(id)!.push(pairs / (elapsed / 1000))
    }
  }
  const rawCpu = cpu.has('raw' as PeerId) ? median(cpu.get('raw' as PeerId)!) : NaN
  const rawRate = rate.has('raw' as PeerId) ? median(rate.get('raw' as PeerId)!) : NaN
  console.log(`| contender | client CPU µs/pair (median of ${rounds}) | pairs/s | × raw |`)
  console.log('|---|--:|--:|--:|')
  for (const id of ids) {
    const c = median(cpu.get(id)!)
    const r = median(rate.get(id)!)
    console.log(`| ${id} | ${c.toFixed(1)} | ${Math.round(r)} | ${(r / rawRate).toFixed(2)} (cpu ${(c / rawCpu).toFixed(2)}) |`)
  }
  await Promise.all(contenders.map((c) => c.close()))
} finally {
  await stopAll()
}

/**
 * Client CPU per uncontended acquire+release pair over N independent
 * redis-servers (redlock://), baton against the Redlock peers, plus the
 * Redis-side µs per pair summed over the nodes (INFO commandstats). CPU time
 * is far less sensitive to a loaded machine than throughput.
 *
 *   node dist/bench/cpu-per-pair-redlock.js [nodes=3] [pairs=5000] [rounds=3] [peer,peer,...]
 *   node --cpu-prof dist/bench/cpu-per-pair-redlock.js 3 20000 1 baton   # profile one
 */
import { Redis } from 'ioredis'
import { startRedlock } from '../test/harness/redlock.js'
import { stopAll } from '../test/harness/servers.js'
import { PEERS, type PeerId } from './peers/index.js'
import { runTag } from './util.js'

const nodes = Number(process.argv[2] ?? 3)
const pairs = Number(process.argv[3] ?? 5_000)
const rounds = Number(process.argv[4] ?? 3)
const ids = (process.argv[5] ?? 'baton,redlock').split(',') as PeerId[]

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}

/** Σ over the nodes of usec and calls, from INFO commandstats. */
async function redisSide(clients: Redis[]): Promise<{ usec: number; calls: number }> {
  let usec = 0
  let calls = 0
  for (const client of clients) {
    const info = await client.info('commandstats')
    for (const m of info.matchAll(/^cmdstat_(\w+):calls=(\d+),usec=(\d+)/gm)) {
      if (m[1] === 'info') continue
      calls += Number(m[2])
      usec += Number(m[3])
    }
  }
  return { usec, calls }
}

const setup = await startRedlock(nodes)
const admin = setup.nodes.map((n) => new Redis(n.port, '127.0.0.1'))
try {
  const contenders = await Promise.all(ids.map((id) =>
    PEERS[id].create({ url: setup.url, ttlMs: 10_000, waitMs: 30_000, profile: 'default', permits: 1 })))
  const cpu = new Map<PeerId, number[]>(ids.map((id) => [id, []]))
  const rate = new Map<PeerId, number[]>(ids.map((id) => [id, []]))
  const server = new Map<PeerId, number[]>(ids.map((id) => [id, []]))
  const calls = new Map<PeerId, number[]>(ids.map((id) => [id, []]))
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < ids.length; i++) {
      const at = (i + round) % ids.length
      const id = ids[at]!
      const contender = contenders[at]!
      const key = `cpu:${runTag}:${id}`
      for (let n = 0; n < 300; n++) await (await contender.acquire(key))() // warm-up
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
      calls.get(id)!.push((after.calls - side.calls - nodes) / pairs)
    }
  }
  console.log(`${nodes} nodes, ${pairs} pairs × ${rounds} rounds (medians)`)
  console.log('| contender | client CPU µs/pair | pairs/s | Redis µs/pair (Σ nodes) | Redis calls/pair |')
  console.log('|---|--:|--:|--:|--:|')
  for (const id of ids) {
    console.log(`| ${id} | ${median(cpu.get(id)!).toFixed(1)} | ${Math.round(median(rate.get(id)!))} | ` +
      `${median(server.get(id)!).toFixed(1)} | ${median(calls.get(id)!).toFixed(2)} |`)
  }
  await Promise.all(contenders.map((c) => c.close()))
} finally {
  admin.forEach((a) => a.disconnect())
  await setup.stop()
  await stopAll()
}

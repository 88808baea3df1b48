/**
 * Listing at scale: `list({ limit: 100 })` (one page) and `list()` (every
 * held lock) with HELD names held and ever more idle names beside them
 * (names released long ago keep their fencing counter for `fenceTtl`: a
 * busy deployment with one name per job has many). The same figure for
 * every store plugs in through a `ListingStore`; Redis is the one here.
 */
import { connect, type Baton, type Lease } from '../../src/index.js'
import { startBatonServer } from '../../test/harness/baton-server.js'
import { closeRedis, openRedis } from '../peers/redis-client.js'
import { fmtInt, fmtMet, fmtMs, median, table } from '../report.js'
import type { BenchContext, Scenario, ScenarioResult, SummaryRow } from '../types.js'
import { runTag } from '../util.js'

const HELD = 10_000
const PAGE = 100
const TARGET_PAGE_MS = 50
const TARGET_ALL_MS = 1000

/** What the scenario needs of a store: its URL for baton, and a way to leave `count` idle names in it. */
interface ListingStore {
  readonly label: string
  readonly url: string
  /** Adds idle names (as a released name leaves them) until `total` exist. */
  seedIdle(total: number): Promise<void>
  close(): Promise<void>
}

/**
 * Idle names on Redis as a release leaves them: the hold key keeping only
 * the counter ("<counter>|-") for fenceTtl. Written by a Lua loop, 10,000 a call.
 */
async function redisStore(ctx: BenchContext, prefix: string): Promise<ListingStore> {
  const admin = await openRedis(ctx.redisUrl)
  const idleKeys = (command: string) => `for i = tonumber(ARGV[2]), tonumber(ARGV[3]) do
    redis.call('${command}', ARGV[1] .. ':{idle/' .. i .. '}:x'${command === 'SET' ? ", '1700000000000000|-', 'PX', 3600000" : ''})
  end`
  const inChunks = async (from: number, to: number, command: string): Promise<void> => {
    for (let at = from; at < to; at += 10_000) await admin.eval(idleKeys(command), 0, prefix, at, Math.min(to, at + 10_000) - 1)
  }
  let seeded = 0
  return {
    label: 'Redis',
    url: `${ctx.redisUrl}?prefix=${prefix}`,
    async seedIdle(total) {
      await inChunks(seeded, total, 'SET')
      seeded = Math.max(seeded, total)
    },
    async close() {
      await inChunks(0, seeded, 'UNLINK')
      await closeRedis(admin)
    },
  }
}

interface Figures {
  idle: number
  pageMs: number[]
  allMs: number[]
  /** GET /v1/locks?limit=PAGE on a lock server over the same store. */
  serverPageMs: number[]
  listed: number
}

async function timed(work: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now()
  await work()
  return performance.now() - t0
}

async function measure(ctx: BenchContext, store: ListingStore, idleCounts: readonly number[], runs: number): Promise<Figures[]> {
  const baton: Baton = await connect(store.url)
  const server = await startBatonServer(['--store', store.url])
  const leases: Lease[] = []
  const figures: Figures[] = []
  try {
    // The held names, spread among the idle ones in name order.
    for (let at = 0; at < HELD; at += 500) {
      leases.push(...await Promise.all(Array.from({ length: Math.min(500, HELD - at) }, (_, i) =>
        baton.mutex(`held/${at + i}`, { ttl: '10m' }).acquire())))
    }
    for (const idle of idleCounts) {
      const t0 = Date.now()
      await store.seedIdle(idle)
      ctx.log(`  ${store.label}: ${fmtInt(HELD)} held, ${fmtInt(idle)} idle names (seeded in ${((Date.now() - t0) / 1000).toFixed(1)} s)`)
      const f: Figures = { idle, pageMs: [], allMs: [], serverPageMs: [], listed: 0 }
      for (let run = 0; run < runs; run++) {
        f.pageMs.push(await timed(() => baton.list({ limit: PAGE })))
        f.allMs.push(await timed(async () => {
          f.listed = (await baton.list()).length
        }))
        f.serverPageMs.push(await timed(async () => {
          const response = await fetch(`${server.base}/v1/locks?limit=${PAGE}`)
          if (!response.ok) throw new Error(`GET /v1/locks: HTTP ${response.status}`)
          await response.arrayBuffer()
        }))
        ctx.log(`    run ${run + 1}: list({ limit: ${PAGE} }) ${fmtMs(f.pageMs.at(-1)!)}, list() ${fmtMs(f.allMs.at(-1)!)} (${fmtInt(f.listed)} listed), `
          + `GET /v1/locks?limit=${PAGE} ${fmtMs(f.serverPageMs.at(-1)!)}`)
      }
      figures.push(f)
    }
  } finally {
    await Promise.allSettled(leases.map((lease) => lease.release()))
    await baton.close()
    await server.stop()
  }
  return figures
}

export const listing: Scenario = {
  id: 'listing',
  title: `Listing at scale: ${fmtInt(HELD)} held names among many idle ones (Redis)`,
  async run(ctx: BenchContext): Promise<ScenarioResult> {
    const runs = ctx.pick(3, 2)
    const idleCounts = ctx.pick([250_000, 1_000_000], [20_000])
    const store = await redisStore(ctx, `benchlist${runTag}`)
    let figures: Figures[]
    try {
      figures = await measure(ctx, store, idleCounts, runs)
    } finally {
      await store.close()
    }
    const rows = figures.map((f) => {
      const page = median(f.pageMs)
      const all = median(f.allMs)
      return [
        store.label, fmtInt(f.idle), fmtMs(page), fmtMs(all), fmtMs(median(f.serverPageMs)), fmtInt(f.listed),
        `page ≤ ${TARGET_PAGE_MS} ms, all ≤ ${fmtMs(TARGET_ALL_MS)}`,
        fmtMet(page <= TARGET_PAGE_MS && all <= TARGET_ALL_MS && f.listed >= HELD),
      ]
    })
    const summary: SummaryRow[] = figures.flatMap((f) => [
      {
        figure: `listing: list({ limit: ${PAGE} }), ${fmtInt(HELD)} held + ${fmtInt(f.idle)} idle (${store.label})`,
        baton: fmtMs(median(f.pageMs)), other: '', ratio: '—', target: `≤ ${TARGET_PAGE_MS} ms`,
        met: median(f.pageMs) <= TARGET_PAGE_MS,
      },
      {
        figure: `listing: list() of all ${fmtInt(HELD)} held + ${fmtInt(f.idle)} idle (${store.label})`,
        baton: fmtMs(median(f.allMs)), other: '', ratio: '—', target: `≤ ${fmtMs(TARGET_ALL_MS)}`,
        met: median(f.allMs) <= TARGET_ALL_MS && f.listed >= HELD,
      },
    ])
    const markdown = [
      `## ${listing.title}`,
      '',
      `${fmtInt(HELD)} names held (one client, ttl 10 min) among idle names as a release leaves them (the counter kept for fenceTtl). `
      + `Per number of idle names: ${runs} runs of list({ limit: ${PAGE} }) then list(), one client, then GET /v1/locks?limit=${PAGE} `
      + 'on a lock server (`baton serve`, its own process) over the same store; medians.',
      '',
      table(['store', 'idle names', `list({ limit: ${PAGE} }) p50`, 'list() all p50', `server GET /v1/locks?limit=${PAGE} p50`, 'listed', 'target', 'met?'], rows),
    ].join('\n')
    return { markdown, summary }
  },
}

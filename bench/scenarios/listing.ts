/**
 * Listing at scale: `list({ limit: 100 })` (one page) and `list()` (every
 * held lock) with HELD names held and ever more idle names beside them
 * (names released long ago keep their fencing counter for `fenceTtl`: a
 * busy deployment with one name per job has many). The same figure for
 * every store: each plugs in through a `ListingStore` (listing-stores.ts).
 * BENCH_LISTING=redis,redis-cluster,postgres,mysql,etcd,zookeeper picks stores (default all).
 * BENCH_LISTING_NAMES=flat holds `held-<i>` instead of `held/<i>` (on etcd,
 * names under a parent path cost a page more: docs/stores/etcd.md).
 */
import { connect, type Baton, type Lease } from '../../src/index.js'
import { startBatonServer } from '../../test/harness/baton-server.js'
import { fmtInt, fmtMet, fmtMs, median, table } from '../report.js'
import type { BenchContext, Scenario, ScenarioResult, SummaryRow } from '../types.js'
import { runTag } from '../util.js'
import { LISTING_STORES, type ListingStore, type ListingStoreId } from './listing-stores.js'

const HELD = 10_000
const PAGE = 100
const TARGET_PAGE_MS = 50
const TARGET_ALL_MS = 1000
/** Held names are `held<SEPARATOR><i>`. */
const SEPARATOR = process.env.BENCH_LISTING_NAMES === 'flat' ? '-' : '/'

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
    // 100 acquires at a time: etcd sets a watch per name, and times out setting 500 at once on a busy machine.
    for (let at = 0; at < HELD; at += 100) {
      leases.push(...await Promise.all(Array.from({ length: Math.min(100, HELD - at) }, (_, i) =>
        baton.mutex(`held${SEPARATOR}${at + i}`, { ttl: store.ttl ?? '10m' }).acquire({ autoExtend: store.ttl !== undefined }))))
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

const STORE_IDS = Object.keys(LISTING_STORES) as ListingStoreId[]

function chosenStores(): ListingStoreId[] {
  const asked = process.env.BENCH_LISTING?.split(',').map((s) => s.trim()).filter(Boolean)
  if (!asked) return STORE_IDS
  const unknown = asked.filter((id) => !STORE_IDS.includes(id as ListingStoreId))
  if (unknown.length > 0) throw new Error(`BENCH_LISTING: unknown store ${unknown.join(', ')} (known: ${STORE_IDS.join(', ')})`)
  return asked as ListingStoreId[]
}

/** One store's figures, its store closed whatever happens. */
async function measureStore(ctx: BenchContext, id: ListingStoreId, runs: number): Promise<{ store: ListingStore; figures: Figures[] }> {
  const store = await LISTING_STORES[id](ctx, `benchlist${runTag}`)
  try {
    return { store, figures: await measure(ctx, store, store.idleCounts, runs) }
  } finally {
    await store.close()
  }
}

export const listing: Scenario = {
  id: 'listing',
  title: `Listing at scale: ${fmtInt(HELD)} held names among many idle ones`,
  // Four stores, each seeded with up to a million names.
  timeoutMs: { full: 2_400_000, quick: 600_000 },
  async run(ctx: BenchContext): Promise<ScenarioResult> {
    const runs = ctx.pick(3, 2)
    const measured: { store: ListingStore; figures: Figures[] }[] = []
    const failed: string[] = []
    for (const id of chosenStores()) {
      try {
        measured.push(await measureStore(ctx, id, runs))
      } catch (error) {
        // One store failing (a timeout seeding it) does not take the others' figures with it.
        ctx.log(`  ${id} failed: ${String(error)}`)
        failed.push(`${id}: ${String(error).slice(0, 200)}`)
      }
    }
    const rows = measured.flatMap(({ store, figures }) => figures.map((f) => {
      const page = median(f.pageMs)
      const all = median(f.allMs)
      return [
        store.label, fmtInt(f.idle), fmtMs(page), fmtMs(all), fmtMs(median(f.serverPageMs)), fmtInt(f.listed),
        `page ≤ ${TARGET_PAGE_MS} ms, all ≤ ${fmtMs(TARGET_ALL_MS)}`,
        fmtMet(page <= TARGET_PAGE_MS && all <= TARGET_ALL_MS && f.listed >= HELD),
      ]
    }))
    const summary: SummaryRow[] = measured.flatMap(({ store, figures }) => figures.flatMap((f) => [
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
    ]))
    const markdown = [
      `## ${listing.title}`,
      '',
      `${fmtInt(HELD)} names held (\`held${SEPARATOR}<i>\`, one client, ttl 10 min) among idle names as a release leaves them, named to sort before every held name `
      + `(the worst case for a scan in name order). Per number of idle names: ${runs} runs of list({ limit: ${PAGE} }) then list(), one client, `
      + `then GET /v1/locks?limit=${PAGE} on a lock server (\`baton serve\`, its own process) over the same store; medians. An idle name is: `
      + measured.map(({ store }) => `${store.label}, ${store.idleNote}`).join('; ') + '.',
      '',
      ...failed.map((reason) => `Failed: ${reason}\n`),
      table(['store', 'idle names', `list({ limit: ${PAGE} }) p50`, 'list() all p50', `server GET /v1/locks?limit=${PAGE} p50`, 'listed', 'target', 'met?'], rows),
    ].join('\n')
    return { markdown, summary }
  },
}

/**
 * 5. Redis memory per held lock: hold N locks at once (distinct names,
 * ttl 10 min), compare used_memory before and after; the same for raw
 * SET NX PX as a reference. Also what stays behind once they are released.
 */
import { createContender, spec, specLabel, type Contender, type ContenderSpec, type Release } from '../peers/index.js'
import { closeRedis, openRedis } from '../peers/redis-client.js'
import { usedMemory } from '../redis-info.js'
import { fmtBytes, fmtInt, fmtMet, fmtNum, fmtRatio, reasonOf, table } from '../report.js'
import type { BenchContext, Scenario, ScenarioResult } from '../types.js'
import { sleep, withTimeout } from '../util.js'

const CONCURRENCY = 256
const TTL_MS = 10 * 60_000
const TARGET_BYTES = 250

interface Measured {
  locks: number
  before: number
  held: number
  afterRelease: number
  keysHeld: number
  keysAfterRelease: number
}

export const memory: Scenario = {
  id: 'memory',
  title: '5. Redis memory per held lock',
  async run(ctx: BenchContext): Promise<ScenarioResult> {
    const locks = ctx.pick(100_000, 20_000)
    const admin = await openRedis(ctx.redisUrl)
    const specs: ContenderSpec[] = [spec('raw', 'default', { ttlMs: TTL_MS }), spec('baton', 'default', { ttlMs: TTL_MS })]
    const results = new Map<string, Measured | string>()
    const nameOf = (i: number): string => `mem/${String(i + 1).padStart(6, '0')}`
    const pool = async (count: number, task: (i: number) => Promise<void>): Promise<void> => {
      let next = 0
      await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
        while (next < count) await task(next++)
      }))
    }
    try {
      for (const s of specs) {
        ctx.log(`  ${specLabel(s)}: ${locks} locks`)
        let contender: Contender | undefined
        const measure = async (): Promise<Measured> => {
          const c = await createContender(s, ctx.redisUrl)
          contender = c
          // Scripts loaded and connections warm before the baseline reading.
          await (await c.acquire('mem/warm-up'))()
          await admin.call('FLUSHALL', 'SYNC')
          await sleep(200)
          const before = await usedMemory(admin)
          const releases: Release[] = new Array(locks)
          await pool(locks, async (i) => {
            releases[i] = await c.acquire(nameOf(i))
          })
          const held = await usedMemory(admin)
          const keysHeld = Number(await admin.dbsize())
          await pool(locks, (i) => releases[i]!())
          const afterRelease = await usedMemory(admin)
          const keysAfterRelease = Number(await admin.dbsize())
          return { locks, before, held, afterRelease, keysHeld, keysAfterRelease }
        }
        try {
          results.set(s.peer, await withTimeout(measure(), ctx.pick(120_000, 60_000), `${locks} locks`))
        } catch (error) {
          results.set(s.peer, `failed: ${reasonOf(error)}`)
        } finally {
          await contender?.close()
          await admin.call('FLUSHALL', 'SYNC')
        }
      }
    } finally {
      await closeRedis(admin)
    }

    const perLock = (m: Measured): number => (m.held - m.before) / m.locks
    const rawM = results.get('raw')
    const batonM = results.get('baton')
    const batonPer = typeof batonM === 'object' ? perLock(batonM) : NaN
    const rawPer = typeof rawM === 'object' ? perLock(rawM) : NaN
    const met = Number.isFinite(batonPer) ? batonPer <= TARGET_BYTES : undefined
    const rows = specs.map((s) => {
      const m = results.get(s.peer)
      if (typeof m !== 'object') return [specLabel(s), m ?? 'failed: not run']
      const isBaton = s.peer === 'baton'
      return [
        specLabel(s),
        fmtInt(m.locks),
        fmtInt(m.before),
        fmtInt(m.held),
        fmtBytes(perLock(m)),
        fmtNum(m.keysHeld / m.locks, 2),
        `${fmtBytes((m.afterRelease - m.before) / m.locks)} (${fmtNum(m.keysAfterRelease / m.locks, 2)} keys)`,
        isBaton ? `≤ ${TARGET_BYTES} B` : '',
        isBaton ? fmtMet(met) : '',
      ]
    })
    const markdown = [
      '## 5. Redis memory per held lock',
      '',
      `${fmtInt(locks)} locks held at once (names \`mem/000001\`…, ttl 10 min, acquired ${CONCURRENCY} at a time); `
      + 'bytes/lock = Δ used_memory (INFO memory) / locks, after a FLUSHALL with scripts already loaded. '
      + '"left after release" is what stays in Redis per name once every lock was released.',
      '',
      table(['contender', 'locks', 'used_memory before', 'used_memory held', 'bytes / lock', 'keys / lock', 'left after release / lock', 'target', 'met?'], rows),
    ].join('\n')
    return {
      markdown,
      summary: [{
        figure: '5. Redis memory per held lock',
        baton: fmtBytes(batonPer),
        other: `raw SET NX PX: ${fmtBytes(rawPer)}`,
        ratio: fmtRatio(batonPer / rawPer),
        target: `≤ ${TARGET_BYTES} B`,
        met,
      }],
    }
  },
}

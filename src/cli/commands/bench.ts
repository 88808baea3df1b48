import { randomBytes } from 'node:crypto'
import { batonContender } from '../../bench/contender.js'
import type { Contender } from '../../bench/contender.js'
import { analyzeGrants, contendedFlows, sequentialPairs } from '../../bench/flows.js'
import { wallNow } from '../../bench/time.js'
import { connect } from '../../index.js'
import { parseStoreUrl } from '../../internal-api.js'
import { DURATIONS_NOTE, durationFlag, EXIT, intFlag, parse, print, STORE_OPTION, storeUrl, textTable, type Command } from '../common.js'

const USAGE = 'usage: baton bench [--store URL] [--seconds 3s] [--contenders 4]'

const HELP = `${USAGE}

A short benchmark of a store, as you would run it before choosing one:
  1. uncontended: one client takes and releases one lock back to back;
  2. contended: several clients (separate connections) fight over one lock,
     each re-acquiring at once after a release; counts grants, hand-overs to
     another client, and the time from a release to the next holder's grant.
It uses fresh lock names under baton-bench/ and releases every hold; what a
store keeps for a finished name (its fencing counter) goes after the store
URL's fenceTtl (1 hour by default; e.g. ?fenceTtl=1m on the URL).
Progress shows on a terminal; piped, only the summary is printed.

options:
  --store URL        the store (default: BATON_URL, else memory://, the embedded store)
  --seconds D        how long each part runs (default 3s)
  --contenders N     clients in the contended part, 2 to 64 (default 4)
${DURATIONS_NOTE}

exit status: 0 done; 1 a part failed or saw two holders at once; 69 store unreachable; 2 bad usage.

examples:
  baton bench --store redis://127.0.0.1:6379
  baton bench --store http://baton-server:7420 --seconds 10 --contenders 16`

export const bench: Command = {
  usage: USAGE,
  help: HELP,
  async main(args) {
    const parsed = parse(args, { ...STORE_OPTION, seconds: { type: 'string' }, contenders: { type: 'string' } }, { min: 0, max: 0, names: '' })
    if (!parsed) {
      print(HELP)
      return EXIT.ok
    }
    const { values } = parsed
    const url = storeUrl(values.store ?? process.env.BATON_URL ?? 'memory://', true)
    const phaseMs = durationFlag(values.seconds ?? '3s', '--seconds')
    const clients = intFlag(values.contenders ?? '4', '--contenders', 2, 64)
    const key = `baton-bench/${randomBytes(4).toString('hex')}`
    const progress = new Progress(process.stderr.isTTY === true)

    const contenders: Contender[] = []
    try {
      for (let i = 0; i < clients; i++) {
        const baton = await connect(url)
        contenders.push(batonContender(baton, 'baton', (name) => baton.mutex(name, { ttl: '10s' }), 30_000))
      }
      const store = parseStoreUrl(url).display
      print(`baton bench: ${store}, ${phaseMs / 1000}s per part`)

      const first = counted(contenders[0]!, progress)
      progress.start('uncontended acquire+release', phaseMs)
      const pairs = await sequentialPairs(first, `${key}/uncontended`, phaseMs)
      progress.stop()
      const sorted = pairs.latencies!

      progress.start(`contended, ${clients} clients on one lock`, phaseMs)
      const startAt = wallNow() + 50
      const stopAt = startAt + phaseMs
      const results = await Promise.all(contenders.map((c, i) =>
        contendedFlows(counted(c, progress), { key: `${key}/contended`, flowIds: [i], startAt, stopAt, holdMs: 0, drainMs: 5000 })))
      progress.stop()
      const grants = results.flatMap((r) => r.grants)
      const stats = analyzeGrants(grants, contenders.map((_, i) => i), startAt, stopAt)
      const errors = results.flatMap((r) => Object.entries(r.errors).map(([reason, n]) => `${n} × ${reason}`))

      print(textTable(['part', 'figure', 'value'], [
        ['uncontended', 'acquire+release pairs/s', rate(pairs.pairs / (pairs.elapsedMs / 1000))],
        ['', 'latency p50 / p99', `${ms(sorted.percentile(50))} / ${ms(sorted.percentile(99))}`],
        [`contended (${clients})`, 'grants/s', rate(stats.grantsPerSec)],
        ['', 'hand-overs to another client/s', rate(stats.handoffsPerSec)],
        ['', 'release → next grant p50 / p99', `${ms(stats.releaseToNextP50)} / ${ms(stats.releaseToNextP99)}`],
        ['', 'fairness (Jain, 1 = even)', stats.jain.toFixed(2)],
        ['', 'grants while another held it', String(stats.overlaps)],
      ]))
      if (errors.length) print(`errors: ${errors.join('; ')}`)
      return stats.overlaps > 0 || errors.length > 0 ? EXIT.failure : EXIT.ok
    } finally {
      progress.stop()
      await Promise.allSettled(contenders.map((c) => c.close()))
    }
  },
}

const rate = (n: number): string => (Number.isFinite(n) ? `${Math.round(n).toLocaleString('en-US')}/s` : '—')
const ms = (n: number): string => (Number.isFinite(n) ? `${n < 10 ? n.toFixed(2) : n.toFixed(1)} ms` : '—')

/** The contender, counting its grants for the progress line. */
function counted(contender: Contender, progress: Progress): Contender {
  return {
    ...contender,
    async acquire(name) {
      const release = await contender.acquire(name)
      progress.count++
      return release
    },
  }
}

/** One self-rewriting line on a terminal (stderr); nothing when not a terminal. */
class Progress {
  count = 0
  private timer: NodeJS.Timeout | undefined

  constructor(private readonly tty: boolean) {}

  start(title: string, durationMs: number): void {
    this.count = 0
    if (!this.tty) return
    const began = Date.now()
    const draw = () => {
      const done = Math.min(1, (Date.now() - began) / durationMs)
      const bar = '█'.repeat(Math.round(done * 20)).padEnd(20, '░')
      process.stderr.write(`\r\x1b[2K${title} ${bar} ${Math.round(done * 100)}% · ${this.count.toLocaleString('en-US')} grants`)
    }
    draw()
    this.timer = setInterval(draw, 100)
  }

  stop(): void {
    if (!this.timer) return
    clearInterval(this.timer)
    this.timer = undefined
    process.stderr.write('\r\x1b[2K')
  }
}

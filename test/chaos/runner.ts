/**
 * The chaos runner: starts a store, client processes running seeded plans
 * through proxies, the nemesis; then checks the merged history.
 *
 *   npm run chaos -- --store redis --seed 1234 --seconds 30
 */
import { fork, type ChildProcess } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { connect, type Baton } from '../../src/index.js'
import { check, type Verdict } from '../../src/chaos/checker.js'
import { historyNow, type History, type HistoryEvent, type Primitive } from '../../src/chaos/history.js'
import { formatRun } from '../../src/chaos/report.js'
import { nameOf, offeredPrimitives } from '../../src/chaos/client.js'
import { FencedNames } from '../../src/chaos/resource.js'
import { startProxy, type Proxy } from '../harness/proxy.js'
import { ms } from '../harness/timing.js'
import type { ChildMessage, ChildSettings } from './child.js'
import { runNemesis } from './nemesis.js'
import { startStore, STORE_KINDS, type ChaosStore, type StoreKind } from './stores.js'

export interface ChaosOptions {
  readonly store: StoreKind
  readonly seed: number
  readonly seconds: number
  readonly processes?: number
  readonly clients?: number
  readonly ttlMs?: number
  /** Only these fault kinds (default: every one the store offers). */
  readonly faults?: readonly string[]
  readonly primitives?: readonly Primitive[]
}

export interface ChaosResult {
  readonly history: History
  readonly verdict: Verdict
  readonly report: string
  readonly replay: string
}

const CHILD = fileURLToPath(new URL('./child.js', import.meta.url))

export function replayOf(o: ChaosOptions): string {
  return `npm run chaos -- --store ${o.store} --seed ${o.seed} --seconds ${o.seconds}` +
    (o.ttlMs ? ` --ttl ${o.ttlMs}` : '') + (o.faults ? ` --faults ${o.faults.join(',')}` : '') + (o.primitives ? ` --primitives ${o.primitives.join(',')}` : '')
}

/** The primitives `url`'s store offers. */
async function offered(url: string): Promise<Primitive[]> {
  const baton = await connect(url)
  try {
    return offeredPrimitives(baton)
  } finally {
    await baton.close()
  }
}

export async function runChaos(o: ChaosOptions): Promise<ChaosResult> {
  const ttlMs = o.ttlMs ?? 1500
  const store: ChaosStore = await startStore(o.store)
  const proxies: Proxy[] = []
  const dir = mkdtempSync(join(tmpdir(), 'baton-chaos-'))
  const children = new Map<number, ChildProcess>()
  const files: string[] = []
  const parentEvents: HistoryEvent[] = []
  try {
    for (const port of store.proxyPorts) proxies.push(await startProxy(port))
    const url = store.proxyPorts.reduce((u, port, i) => u.replaceAll(`127.0.0.1:${port}`, `127.0.0.1:${proxies[i]!.port}`), store.url)
    const primitives = (await offered(store.url)).filter((p) => !o.primitives || o.primitives.includes(p))
    const prefix = `chaos/${o.seed}-${process.pid}`
    let startedAt = historyNow()
    let stopAt: number | undefined
    const ready: Promise<void>[] = []
    const graceMs = ttlMs * 3
    const resource = new FencedNames()
    let nextIndex = 0
    const exits: Promise<void>[] = []
    const start = () => {
      const index = nextIndex++
      const file = join(dir, `p${index}.jsonl`)
      files.push(file)
      const settings: ChildSettings = { url, seed: o.seed, processIndex: index, clients: o.clients ?? 3, primitives, ttlMs, names: 2, prefix, file, graceMs, ...(stopAt === undefined ? {} : { stopAt }) }
      const child = fork(CHILD, [JSON.stringify(settings)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] })
      child.on('error', () => {})
      children.set(index, child)
      exits.push(new Promise((resolve) => child.once('exit', () => { children.delete(index); resolve() })))
      ready.push(new Promise((resolve) => { child.on('message', (m: ChildMessage) => { if (m.type === 'ready') resolve() }); child.once('exit', () => resolve()) }))
      child.on('message', (m: ChildMessage) => {
        if (m.type === 'ready') return
        const write = resource.write(m, m.name, BigInt(m.token))
        parentEvents.push(write)
        if (child.connected) child.send({ type: 'write', id: m.id, accepted: write.accepted })
      })
    }
    for (let i = 0; i < (o.processes ?? 3); i++) start()
    let readyTimer: NodeJS.Timeout | undefined
    await Promise.race([Promise.all(ready), new Promise((resolve) => { readyTimer = setTimeout(resolve, ms(30_000)) })])
    clearTimeout(readyTimer)
    startedAt = historyNow()
    stopAt = startedAt + o.seconds * 1000
    for (const child of children.values()) if (child.connected) child.send({ type: 'start', stopAt })
    const named = primitives.flatMap((p) => [0, 1].map((i) => ({ name: nameOf(prefix, p, i), primitive: p })))
    const reads: Promise<void>[] = []
    const runnerClient = new RunnerClient(store.url, named, (e) => parentEvents.push(e))
    const faultKinds = await runNemesis({
      store, proxies, ttlMs, children: () => children,
      heldNames: () => runnerClient.heldNames(), forceRelease: (name) => runnerClient.forceRelease(name),
      names: [...new Set(named.map((n) => n.name))],
      killChild: (index) => { const c = children.get(index); c?.kill('SIGCONT'); c?.kill('SIGKILL'); start() },
      record: (f) => {
        parentEvents.push(f)
        if (f.emptied) reads.push(readNames(store.url, named.filter((n) => !f.emptied!.names || f.emptied!.names.includes(n.name)), ttlMs * 2, (e) => parentEvents.push(e)))
      },
    }, o.seed, stopAt, o.faults)
    await Promise.all(reads)
    await runnerClient.close()
    const end = stopAt
    for (const proxy of proxies) { proxy.onReply(undefined); proxy.resume() }
    // Every process stops by itself (stopAt, then its grace); a stuck one is killed.
    const force = setTimeout(() => { for (const c of children.values()) { c.kill('SIGCONT'); c.kill('SIGKILL') } }, Math.max(0, end + graceMs + ms(10_000) - historyNow()))
    await Promise.all(exits)
    clearTimeout(force)
    const endedAt = historyNow()
    parentEvents.push(...await leftovers(store.url, prefix, ttlMs))
    const events: HistoryEvent[] = [...parentEvents]
    for (const file of files) {
      let text = ''
      try { text = readFileSync(file, 'utf8') } catch { continue } // a process killed before its first event
      for (const line of text.split('\n')) if (line) { try { events.push(JSON.parse(line) as HistoryEvent) } catch { /* a line cut by kill -9 */ } }
    }
    events.sort((a, b) => a.at - b.at)
    const history: History = { seed: o.seed, store: o.store, events, ttlMs, startedAt, endedAt, faultKinds }
    const verdict = check(history)
    const replay = replayOf(o)
    return { history, verdict, report: formatRun(history, verdict, replay), replay }
  } finally {
    for (const c of children.values()) { c.kill('SIGCONT'); c.kill('SIGKILL') }
    await Promise.all(proxies.map((p) => p.close()))
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * The runner's own client, for store faults that act on the run's names
 * (a forced release right after the notice connections were cut): its
 * calls are recorded as those of process -1.
 */
class RunnerClient {
  private baton: Promise<Baton | undefined> | undefined
  private seq = 0

  constructor(private readonly url: string, private readonly named: readonly { name: string; primitive: Primitive }[], private readonly record: (e: HistoryEvent) => void) {}

  private connected(): Promise<Baton | undefined> {
    return (this.baton ??= connect(this.url, { commandTimeout: ms(2000) }).catch(() => undefined))
  }

  async heldNames(): Promise<string[]> {
    const baton = await this.connected()
    if (!baton) return []
    const names = [...new Set(this.named.map((n) => n.name))]
    const views = await Promise.all(names.map((name) => baton.inspect(name).catch(() => undefined)))
    return names.filter((_, i) => (views[i]?.holders.length ?? 0) > 0)
  }

  async forceRelease(name: string): Promise<boolean> {
    const baton = await this.connected()
    if (!baton) return false
    const actor = { process: -1, client: 0 }
    const op = `runner-f${++this.seq}`
    const primitive = this.named.find((n) => n.name === name)?.primitive ?? 'mutex'
    this.record({ type: 'invoke', ...actor, op, kind: 'forceRelease', primitive, names: [name], at: historyNow() })
    try {
      const answer = await baton.forceRelease(name)
      this.record({ type: 'complete', ...actor, op, at: historyNow(), outcome: 'ok', answer })
      return answer
    } catch (error) {
      this.record({ type: 'complete', ...actor, op, at: historyNow(), outcome: 'error', message: String(error).slice(0, 200) })
      return false
    }
  }

  async close(): Promise<void> {
    await (await this.baton)?.close()
  }
}

/**
 * After a fault that left the store empty, who holds each name, read by
 * the runner every 100 ms for `forMs`: a hold nobody was granted (an
 * attempt run after its caller was told it failed) shows here.
 */
async function readNames(url: string, names: readonly { name: string; primitive: Primitive }[], forMs: number, record: (e: HistoryEvent) => void): Promise<void> {
  const until = historyNow() + forMs
  const baton = await connect(url, { commandTimeout: ms(2000) }).catch(() => undefined)
  if (!baton) return
  const actor = { process: -1, client: 0 }
  let seq = 0
  try {
    while (historyNow() < until) {
      for (const { name, primitive } of names) {
        const op = `runner-o${++seq}`
        record({ type: 'invoke', ...actor, op, kind: 'inspect', primitive, names: [name], at: historyNow() })
        const view = await baton.inspect(name).catch(() => undefined)
        const at = historyNow()
        record({ type: 'complete', ...actor, op, at, outcome: view === undefined ? 'error' : 'ok' })
        if (view !== undefined) record({ type: 'seen', ...actor, op, name, at, holders: (view?.holders ?? []).map((h) => ({ owner: h.owner, token: String(h.token) })) })
      }
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  } finally {
    await baton.close()
  }
}

/**
 * Once every client has closed: after every lease has run out, no name of
 * the run may have a holder or a waiter left (keys that only keep a name's
 * last token are allowed, up to fenceTtl).
 */
async function leftovers(url: string, prefix: string, ttlMs: number): Promise<HistoryEvent[]> {
  // Each lease runs out within its ttl; a store may raise the ttl to its floor.
  const deadline = historyNow() + ttlMs * 2 + ms(5000)
  let baton: Baton | undefined
  while (!baton) {
    baton = await connect(url, { commandTimeout: ms(5000) }).catch(() => undefined)
    if (!baton && historyNow() > deadline + ms(20_000)) {
      console.error(`chaos: the store did not answer after the run; its leftover state was not checked`)
      return []
    }
  }
  try {
    for (;;) {
      const views = await baton.list({ prefix }).catch(() => undefined)
      const busy = views?.filter((v) => v.holders.length > 0 || v.waiters.length > 0) ?? []
      if (views && busy.length === 0) return []
      if (historyNow() > deadline) {
        return busy.map((v) => ({ type: 'leftover' as const, name: v.name, at: historyNow(), holders: v.holders.length, waiters: v.waiters.length }))
      }
      await new Promise((resolve) => setTimeout(resolve, 250))
    }
  } finally {
    await baton.close()
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: {
    store: { type: 'string', default: 'redis' }, seed: { type: 'string' }, seconds: { type: 'string', default: '30' },
    processes: { type: 'string' }, clients: { type: 'string' }, ttl: { type: 'string' }, faults: { type: 'string' }, primitives: { type: 'string' },
  } })
  const store = values.store as StoreKind
  if (!STORE_KINDS.includes(store)) throw new Error(`--store must be one of ${STORE_KINDS.join(', ')}`)
  const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed)
  const result = await runChaos({
    store, seed, seconds: Number(values.seconds),
    ...(values.processes ? { processes: Number(values.processes) } : {}),
    ...(values.clients ? { clients: Number(values.clients) } : {}),
    ...(values.ttl ? { ttlMs: Number(values.ttl) } : {}),
    ...(values.faults ? { faults: values.faults.split(',') } : {}),
    ...(values.primitives ? { primitives: values.primitives.split(',') as Primitive[] } : {}),
  })
  console.log(result.report)
  // Warnings too: whether one is load or a defect (a hang) is read from the history.
  if (result.verdict.violations.length + result.verdict.warnings.length > 0) console.log(keepHistory(store, seed, result.history))
  process.exitCode = result.verdict.violations.length === 0 ? 0 : 1
}

/** Writes a failing (or warning) run's whole history (the evidence in full) where temporary files go; returns the line that says where. */
export function keepHistory(store: string, seed: number, history: History): string {
  const dir = join(tmpdir(), 'baton-chaos-failures')
  mkdirSync(dir, { recursive: true })
  const file = join(dir, `${store}-${seed}-${process.pid}.json`)
  writeFileSync(file, JSON.stringify(history))
  return `history: ${file}`
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main()

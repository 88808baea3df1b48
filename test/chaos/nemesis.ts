/**
 * The nemesis: at seeded moments, one fault from those the run offers. The
 * generic ones need only the proxies and the client processes; a store adds
 * its own (restart, failover). Each fault is recorded with when it began,
 * when it healed and what it did.
 */
import type { Fault } from '../../src/chaos/history.js'
import { historyNow } from '../../src/chaos/history.js'
import { Random } from '../../src/chaos/prng.js'
import { dropOnce, isPush, type Proxy } from '../harness/proxy.js'
import type { RunView } from './store.js'
import type { ChaosStore } from './stores.js'

export interface NemesisTarget extends RunView {
  readonly store: ChaosStore
  readonly proxies: readonly Proxy[]
  /** kill -9 one client process and start a replacement. */
  readonly killChild: (index: number) => void
  /** The lock names the run's clients use (a store fault may aim at one). */
  readonly names: readonly string[]
  readonly record: (fault: Fault) => void
}

type FaultMaker = (random: Random) => Promise<{ target: string; detail: string; emptied?: Fault['emptied'] } | undefined>

export function faultsOf(t: NemesisTarget): Map<string, FaultMaker> {
  const faults = new Map<string, FaultMaker>()
  const anyProxy = (random: Random) => t.proxies.length === 0 ? undefined : random.pick(t.proxies)
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
  if (t.proxies.length > 0) {
    faults.set('lost-reply', async (random) => {
      const proxy = anyProxy(random)!
      const rule = dropOnce((chunk) => !isPush(chunk))
      proxy.onReply(rule)
      await sleep(t.ttlMs)
      proxy.onReply(undefined)
      return { target: `proxy :${proxy.port}`, detail: rule.dropped ? 'a reply dropped after the store applied it, its connection cut' : 'no reply passed meanwhile' }
    })
    faults.set('partition', async (random) => {
      const proxy = anyProxy(random)!
      const ms = random.int(Math.round(t.ttlMs / 4), Math.round(t.ttlMs * 1.5))
      await proxy.partition(ms)
      return { target: `proxy :${proxy.port}`, detail: `every reply held ${ms} ms, then every connection reset` }
    })
    faults.set('connection-reset', async (random) => {
      const proxy = anyProxy(random)!
      const open = proxy.connections()
      if (open.length === 0) return undefined
      const picked = random.int(0, open.length - 1)
      open[picked]!.destroy()
      return { target: `proxy :${proxy.port}`, detail: `connection ${picked + 1} of ${open.length} reset (a notice connection when it is the one)` }
    })
  }
  const child = (random: Random) => {
    const alive = [...t.children()]
    return alive.length === 0 ? undefined : random.pick(alive)
  }
  faults.set('client-stall', async (random) => {
    const picked = child(random)
    if (!picked) return undefined
    const [index, proc] = picked
    const ms = random.int(Math.round(t.ttlMs / 2), t.ttlMs * 2)
    proc.kill('SIGSTOP')
    // Waiting in its socket when it resumes: read before its timers run.
    if (proc.connected) proc.send({ type: 'probe' })
    await sleep(ms)
    proc.kill('SIGCONT')
    return { target: `process ${index}`, detail: `stopped (SIGSTOP) for ${ms} ms` }
  })
  faults.set('client-kill', async (random) => {
    const picked = child(random)
    if (!picked) return undefined
    t.killChild(picked[0])
    return { target: `process ${picked[0]}`, detail: 'killed (-9), a new process started in its place' }
  })
  for (const [kind, make] of Object.entries(t.store.faults)) {
    faults.set(kind, async (random) => {
      const done = await make(random, t.names, t)
      return typeof done === 'string' ? { target: t.store.kind, detail: done } : { target: t.store.kind, ...done }
    })
  }
  return faults
}

/** Runs faults one after another until `stopAt`, at seeded gaps; resolves when the last one has healed, with the kinds it drew from. */
export async function runNemesis(t: NemesisTarget, seed: number, stopAt: number, only?: readonly string[]): Promise<readonly string[]> {
  const random = Random.derive(seed, 0x4e454d)
  const faults = faultsOf(t)
  const kinds = [...faults.keys()].filter((k) => !only || only.includes(k))
  if (kinds.length === 0) return kinds
  for (;;) {
    const gap = random.int(Math.round(t.ttlMs / 2), t.ttlMs * 2)
    await new Promise((resolve) => setTimeout(resolve, gap))
    if (historyNow() >= stopAt) return kinds
    const kind = random.pick(kinds)
    const fault: Fault = { type: 'fault', kind, target: '', at: historyNow() }
    try {
      const done = await faults.get(kind)!(random)
      if (!done) continue
      t.record({ ...fault, target: done.target, detail: done.detail, healedAt: historyNow(), ...(done.emptied ? { emptied: done.emptied } : {}) })
    } catch (error) {
      t.record({ ...fault, target: 'nemesis', detail: `the fault failed: ${String(error)}`, healedAt: historyNow() })
    }
  }
}

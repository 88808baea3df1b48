/**
 * Runs one client's plan against a store and records what it did and saw:
 * every invocation and completion, every grant with the deadline the client
 * knew, releases, losses (the signal, when it was seen), probes of `held`,
 * `signal.aborted` and `remainingMs()` at random moments, leaders read and
 * observed, and fenced writes (made through `write`, which the resource's
 * owner answers and records).
 */
import type { Baton } from '../baton.js'
import type { Lease } from '../core/lease.js'
import { isBatonError } from '../core/errors.js'
import type { Leadership } from '../primitives/election.js'
import type { MultiLease } from '../primitives/multi.js'
import { historyNow, PRIMITIVES, type HistoryEvent, type HoldMode, type OpKind, type Primitive } from './history.js'
import { permitsOf, type Step } from './plan.js'

export interface ClientSettings {
  readonly process: number
  readonly client: number
  readonly baton: Baton
  readonly steps: readonly Step[]
  /** The run's name prefix, e.g. `chaos/1234-ab12`. */
  readonly prefix: string
  readonly ttlMs: number
  /** Stop starting steps after this (history clock). */
  readonly stopAt: number
  readonly record: (event: HistoryEvent) => void
  /** A fenced write of `name` at the resource: true if it accepted the token. */
  readonly write: (name: string, token: bigint, lease: string) => Promise<boolean>
  /** Leases held now in this process, probed all at once when the runner asks (probeAll). */
  readonly active: Map<string, Probed>
}

/** A lease as the probes see it. */
export interface Probed {
  readonly held: boolean
  readonly signal: AbortSignal
  remainingMs(): number
}

/** The primitives a store offers (its capabilities, and whether it can elect). */
export function offeredPrimitives(baton: Baton): Primitive[] {
  const d = baton.driver
  return PRIMITIVES.filter((p) => p === 'fair' ? d.capabilities.fair : p === 'rwlock' ? d.capabilities.rwlock
    : p === 'semaphore' ? d.capabilities.semaphore : p === 'election' ? Boolean(d.proclaim && d.observe && d.electionRefusal === undefined) : true)
}

/** The name a plan index stands for. */
export function nameOf(prefix: string, primitive: Primitive, index: number): string {
  return `${prefix}/${primitive === 'multi' ? 'mutex' : primitive}/${index}`
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms)))

/**
 * Reads `lease` now. A lease read as held with no time left is read again
 * after a few ms of busy waiting (no timer can fire in between): still held
 * then, it looks held after its deadline.
 */
export function probe(lease: Probed, id: string, actor: { process: number; client: number }, record: (e: HistoryEvent) => void): void {
  const at = historyNow()
  const held = lease.held
  const aborted = lease.signal.aborted
  const remainingMs = lease.remainingMs()
  if ((held || !aborted) && remainingMs === 0) {
    const until = historyNow() + 3
    while (historyNow() < until) { /* busy: no timer runs */ }
    record({ type: 'probe', ...actor, lease: id, at, held, aborted, remainingMs, stillHeld: lease.held, stillNotAborted: !lease.signal.aborted, recheckedAfterMs: historyNow() - at })
    return
  }
  record({ type: 'probe', ...actor, lease: id, at, held, aborted, remainingMs })
  if (held && remainingMs > 0) record({ type: 'renew', ...actor, lease: id, at, deadline: at + remainingMs })
}

/** Every lease of this process, read now (the runner asks right after resuming a stopped process). */
export function probeAll(active: Map<string, Probed>, process: number, record: (e: HistoryEvent) => void): void {
  for (const [id, lease] of active) probe(lease, id, { process, client: Number(id.split('c')[1]?.split('l')[0] ?? 0) }, record)
}

export async function runClient(s: ClientSettings): Promise<void> {
  const actor = { process: s.process, client: s.client }
  let seq = 0
  const opId = () => `p${s.process}c${s.client}o${++seq}`
  /** Runs `fn` as one operation: invoke, then complete with its outcome. */
  const op = async <T>(kind: OpKind, primitive: Primitive, names: readonly string[], fn: (id: string) => Promise<T>, lease?: string): Promise<{ id: string; value?: T; error?: unknown }> => {
    const id = opId()
    s.record({ type: 'invoke', ...actor, op: id, kind, primitive, names, at: historyNow(), ...(lease ? { lease } : {}) })
    try {
      const value = await fn(id)
      s.record({ type: 'complete', ...actor, op: id, at: historyNow(), outcome: value === null ? 'busy' : 'ok', ...(typeof value === 'boolean' ? { answer: value } : {}) })
      return { id, value }
    } catch (error) {
      const holder = isBatonError(error) && error.holder ? { holder: { owner: error.holder.owner, token: String(error.holder.token) } } : {}
      s.record({ type: 'complete', ...actor, op: id, at: historyNow(), outcome: 'error', code: isBatonError(error) ? error.code : 'UNEXPECTED', message: String((error as Error)?.message ?? error).slice(0, 200), ...holder })
      return { id, error }
    } finally {
      // Every completion is a moment to look: right after an answer that sat
      // in a socket through a stall is where a lapsed lease may look held.
      probeAll(s.active, s.process, s.record)
    }
  }
  // Owners of this client's attempts begin with its id: a hold a read shows is traced back to its client.
  s.record({ type: 'client', ...actor, clientId: s.baton.keeper.clientId, at: historyNow() })
  let step = 0
  while (historyNow() < s.stopAt) {
    const plan = s.steps[step++ % s.steps.length]!
    try {
      await runStep(plan)
    } catch (error) {
      // A step's own bookkeeping failed: the run goes on, the message says where.
      s.record({ type: 'complete', ...actor, op: opId(), at: historyNow(), outcome: 'error', code: 'CHAOS_STEP', message: String(error).slice(0, 200) })
    }
  }

  async function runStep(plan: Step): Promise<void> {
    if (plan.action === 'idle') return sleep(plan.ms)
    if (plan.action === 'forceRelease') {
      const name = nameOf(s.prefix, plan.primitive, plan.names[0]!)
      await op('forceRelease', plan.primitive, [name], () => s.baton.forceRelease(name))
      return
    }
    if (plan.action === 'leader') {
      const name = nameOf(s.prefix, 'election', plan.names[0]!)
      await op('leader', 'election', [name], async () => {
        const leader = await s.baton.election(name, { ttl: s.ttlMs }).leader()
        s.record({ type: 'observation', ...actor, via: 'leader', stream: '', name, at: historyNow(), token: leader ? String(leader.token) : null, ...(leader ? { holder: leader.holder, value: leader.value } : {}) })
        return leader
      })
      return
    }
    await hold(plan)
  }

  async function inspect(primitive: Primitive, name: string): Promise<void> {
    await op('inspect', primitive, [name], async (id) => {
      const view = await s.baton.inspect(name)
      const holders = (view?.holders ?? []).map((h) => ({ owner: h.owner, token: String(h.token) }))
      s.record({ type: 'seen', ...actor, op: id, name, at: historyNow(), holders })
      return holders
    })
  }

  async function hold(plan: Extract<Step, { action: 'hold' }>): Promise<void> {
    const names = plan.names.map((i) => nameOf(s.prefix, plan.primitive, i))
    const controller = new AbortController()
    const abortTimer = plan.wait.kind === 'abort' ? setTimeout(() => controller.abort(), plan.wait.afterMs) : undefined
    const waitOptions = plan.wait.kind === 'wait' ? { wait: plan.wait.ms } : plan.wait.kind === 'abort' ? { signal: controller.signal } : {}
    const kind: OpKind = plan.primitive === 'election' ? 'campaign' : plan.wait.kind === 'try' ? 'tryAcquire' : 'acquire'
    const ttl = s.ttlMs
    const acquired = await op(kind, plan.primitive, names, async (): Promise<Lease | MultiLease | Leadership | null> => {
      switch (plan.primitive) {
        case 'mutex': case 'fair': {
          const m = s.baton.mutex(names[0]!, { ttl, fair: plan.primitive === 'fair', reentrant: false })
          return plan.wait.kind === 'try' ? m.tryAcquire({ autoExtend: plan.autoExtend }) : m.acquire({ ...waitOptions, autoExtend: plan.autoExtend })
        }
        case 'rwlock': {
          const rw = s.baton.rwlock(names[0]!, { ttl })
          const side = plan.side === 'read' ? rw.read() : rw.write()
          return plan.wait.kind === 'try' ? side.tryAcquire({ autoExtend: plan.autoExtend }) : side.acquire({ ...waitOptions, autoExtend: plan.autoExtend })
        }
        case 'semaphore': {
          const sem = s.baton.semaphore(names[0]!, { ttl, permits: permitsOf(plan.names[0]!) })
          return plan.wait.kind === 'try' ? sem.tryAcquire({ autoExtend: plan.autoExtend, weight: plan.weight }) : sem.acquire({ ...waitOptions, autoExtend: plan.autoExtend, weight: plan.weight })
        }
        case 'multi': {
          const multi = s.baton.multi(names, { ttl })
          return plan.wait.kind === 'try' ? multi.tryAcquire() : multi.acquire(waitOptions)
        }
        case 'election':
          return s.baton.election(names[0]!, { ttl }).campaign({ value: `p${s.process}c${s.client}`, ...(plan.wait.kind === 'wait' ? { wait: plan.wait.ms } : plan.wait.kind === 'abort' ? { signal: controller.signal } : { wait: 0 }) })
      }
    })
    clearTimeout(abortTimer)
    // Busy: who holds it, read at once (a hold nobody was granted shows here).
    if (acquired.value === null) for (const name of names) await inspect(plan.primitive, name)
    if (!acquired.value) return
    const got = acquired.value
    const id = `p${s.process}c${s.client}l${seq}`
    const parts: Lease[] = 'leases' in got ? [...got.leases] : 'lease' in got ? [got.lease] : [got]
    // Every part read at once, before the first record: a process stops on its way out of a record's write.
    const grantedAt = historyNow()
    const left = parts.map((part) => part.remainingMs())
    const mode: HoldMode = plan.primitive === 'semaphore' ? 'permit' : plan.primitive === 'rwlock' ? (plan.side === 'read' ? 'read' : 'write') : 'exclusive'
    parts.forEach((part, i) => {
      s.record({ type: 'grant', ...actor, op: acquired.id, lease: id, primitive: plan.primitive, name: part.name, mode, token: String(part.token), owner: part.owner,
        weight: plan.weight, permits: plan.primitive === 'semaphore' ? permitsOf(plan.names[0]!) : 1, at: grantedAt, deadline: grantedAt + left[i]! })
    })
    const lost = (signal: AbortSignal) => {
      const seen = () => s.record({ type: 'loss', ...actor, lease: id, at: historyNow(), ...(isBatonError(signal.reason) ? { code: signal.reason.code } : {}) })
      if (signal.aborted) seen()
      else signal.addEventListener('abort', seen, { once: true })
    }
    lost(got.signal)
    // The part read last decides what a probe sees: for a multi-lock, any part.
    let current: Lease | MultiLease | Leadership = got
    const probed: Probed = { get held() { return current.held }, get signal() { return current.signal }, remainingMs: () => 'leases' in current ? Math.min(...current.leases.map((p) => p.remainingMs())) : ('lease' in current ? current.lease : current).remainingMs() }
    s.active.set(id, probed)
    try {
      const events: { at: number; run: () => Promise<void> }[] = [
        ...plan.probesAt.map((at) => ({ at, run: async () => probe(probed, id, actor, s.record) })),
        ...Array.from({ length: plan.writes }, (_, k) => ({ at: Math.round(((k + 1) * plan.holdMs) / (plan.writes + 1)), run: async () => {
          if (!current.held) return
          for (const part of parts) await s.write(part.name, part.token, id)
        } })),
      ]
      if (plan.extendAt !== undefined) {
        events.push({ at: plan.extendAt, run: async () => {
          const target = 'lease' in current ? current.lease : current
          // One reading, taken the moment extend() resolves, before anything is recorded: a renewal that
          // resolved with no time left is recorded as such (the checker's renewed-after-lapse). Read after
          // op's own records, a SIGSTOP acted on at their write (a process stops on its way out of a system
          // call) put the pause between the answer and the reading: a lease renewed in time read as renewed
          // after it lapsed (fresh-clone run F8, verify on Redis).
          let reading: { at: number; remainingMs: number } | undefined
          const r = await op('extend', plan.primitive, names, async () => {
            const renewed = await target.extend()
            reading = { at: historyNow(), remainingMs: probed.remainingMs() }
            return renewed
          }, id)
          if (!r.error && reading) s.record({ type: 'renew', ...actor, lease: id, at: reading.at, deadline: reading.at + reading.remainingMs })
        } })
      }
      if (plan.downgradeAt !== undefined && plan.primitive === 'rwlock') {
        events.push({ at: plan.downgradeAt, run: async () => {
          const write = got as Lease
          if (!write.held) return
          await op('downgrade', 'rwlock', names, async () => {
            const r = await write.run(() => s.baton.rwlock(names[0]!, { ttl }).read().acquire())
            s.record({ type: 'end', ...actor, lease: id, at: historyNow(), why: 'downgrade', readOwner: r.owner, readToken: String(r.token) })
            // From here the probes read the read side: the write handle is released.
            current = r
            await write.release()
            return r
          }, id)
        } })
      }
      if (plan.proclaimAt !== undefined && plan.primitive === 'election') {
        events.push({ at: plan.proclaimAt, run: async () => { await op('proclaim', 'election', names, () => (got as Leadership).proclaim(`p${s.process}c${s.client}@${seq}`), id) } })
      }
      events.sort((a, b) => a.at - b.at)
      for (const e of events) {
        await sleep(grantedAt + e.at - historyNow())
        await e.run()
      }
      await sleep(grantedAt + plan.holdMs - historyNow())
    } finally {
      if (plan.lapse) {
        // Stops renewing: the lease runs out; its signal must fire, probes must say lost.
        await sleep(grantedAt + s.ttlMs * 1.2 - historyNow())
        probe(probed, id, actor, s.record)
      }
      s.record({ type: 'end', ...actor, lease: id, at: historyNow(), why: plan.primitive === 'election' ? 'resign' : 'release' })
      s.active.delete(id)
      await op(plan.primitive === 'election' ? 'resign' : 'release', plan.primitive, names, () => current.release(), id)
    }
  }
}

/**
 * One `baton verify` worker process. It records its history (the chaos
 * suite's events, src/chaos/history.ts) in its own file, as the chaos
 * suite's client processes do, and runs one of two workloads:
 *
 * - `counter`: takes one lock, does fenced read-modify-write cycles on the
 *   verifier's counter for a while, lets go, again: the way a careful
 *   user's job would. It stops writing once the lease's signal fires or the
 *   counter refuses its token, and renews nothing (so a pause past the ttl
 *   really lets the next holder in).
 * - a primitive (or `mixed`): a few clients, each running its part of the
 *   seeded chaos plan (src/chaos/plan.ts, every hold waiting) through the
 *   chaos client (src/chaos/client.ts).
 *
 * A store that does not answer (restarted, failed over, cut off) is a fault
 * the run goes through, not the end of the worker: every call, connect
 * included, is tried again; a failed call is a completion with its error
 * code in the history, which the verifier reports as unavailability.
 */
import { appendFileSync } from 'node:fs'
import { type Baton, type BatonError, connect, isBatonError } from '../../index.js'
import { probeAll, runClient, type Probed } from '../../chaos/client.js'
import { historyNow, type HistoryEvent, type Primitive } from '../../chaos/history.js'
import { planOf } from '../../chaos/plan.js'
import { UNAVAILABLE_CODES, type VerifierMessage, type WorkerMessage, type WorkerSettings } from './protocol.js'

const isUnavailable = (error: unknown): error is BatonError => isBatonError(error) && UNAVAILABLE_CODES.includes(error.code)

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)))

export async function runWorker(settings: WorkerSettings): Promise<void> {
  const send = (message: WorkerMessage) => { if (process.connected) process.send!(message) }
  const record = (event: HistoryEvent) => appendFileSync(settings.file, `${JSON.stringify(event)}\n`)
  const pending = new Map<number, (reply: VerifierMessage) => void>()
  const active = new Map<string, Probed>()
  let stopping = false
  let stopped: (() => void) | undefined
  let nextId = 1
  process.on('message', (message: VerifierMessage) => {
    if (message.type === 'stop') { stopping = true; stopped?.() }
    else if (message.type === 'probe') probeAll(active, settings.process, record)
    else pending.get(message.id)?.(message)
  })
  // The verifier going away (killed, crashed) ends the worker: no orphan keeps contending.
  process.on('disconnect', () => process.exit(0))
  const ask = <R extends VerifierMessage>(message: WorkerMessage & { id: number }) =>
    new Promise<R>((resolve) => {
      if (!process.connected) return
      pending.set(message.id, (reply) => { pending.delete(message.id); resolve(reply as R) })
      send(message)
    })

  /** Connects one client, trying again until it answers or the run ends. */
  const client = async (): Promise<Baton | undefined> => {
    for (let backoff = 50; !stopping; backoff = Math.min(backoff * 2, 1000)) {
      try {
        return await connect(settings.url)
      } catch (error) {
        if (!isUnavailable(error)) throw error
        send({ type: 'unavailable', during: 'connect', at: historyNow(), message: `${error.code}: ${error.message.replace(/^baton: /, '')}` })
        await sleep(backoff)
      }
    }
    return undefined
  }

  if (settings.workload === 'counter') {
    const baton = await client()
    if (baton === undefined) return
    try {
      await runCounter(settings, baton, record, () => stopping, ask, send)
    } finally {
      await baton.close().catch(() => {})
    }
    return
  }

  const clients: Baton[] = []
  for (let i = 0; i < settings.clients; i++) {
    const baton = await client()
    if (baton === undefined) break
    clients.push(baton)
  }
  const plan = planOf({
    seed: settings.seed, processIndex: settings.process, clients: clients.length, primitives: settings.primitives as Primitive[],
    ttlMs: settings.ttlMs, names: 2, stepsPerClient: 400, contend: true,
  })
  const closeAll = () => Promise.allSettled(clients.map((c) => c.close()))
  // After `stop`, steps under way finish (a hold, its release) within a few leases; then the clients close.
  let grace: NodeJS.Timeout | undefined
  stopped = () => { grace = setTimeout(closeAll, settings.ttlMs * 3) }
  if (stopping) stopped()
  await Promise.all(clients.map((baton, index) => runClient({
    process: settings.process, client: index, baton, steps: plan[index]!, prefix: settings.prefix, ttlMs: settings.ttlMs,
    get stopAt() { return stopping ? 0 : Infinity },
    record, active,
    write: async (name, token, lease) => {
      const reply = await ask<Extract<VerifierMessage, { type: 'write' }>>({ type: 'fenced-write', id: nextId++, name, token: String(token), lease, client: index })
      return reply.accepted
    },
  })))
  clearTimeout(grace)
  await closeAll()
}

/** The counter workload: one client (client 0), one lock. */
async function runCounter(
  settings: WorkerSettings, baton: Baton, record: (event: HistoryEvent) => void, stopping: () => boolean,
  ask: <R extends VerifierMessage>(message: WorkerMessage & { id: number }) => Promise<R>, send: (message: WorkerMessage) => void,
): Promise<void> {
  const name = `${settings.prefix}/counter`
  const actor = { process: settings.process, client: 0 }
  const lock = baton.mutex(name, { ttl: settings.ttlMs, reentrant: false })
  let seq = 0
  let nextId = 1
  /** One operation in the history: invoke, then complete with its outcome. */
  const op = async <T>(kind: 'acquire' | 'release', fn: () => Promise<T>, lease?: string): Promise<{ value?: T; error?: unknown; id: string }> => {
    const id = `p${actor.process}c0o${++seq}`
    record({ type: 'invoke', ...actor, op: id, kind, primitive: 'mutex', names: [name], at: historyNow(), ...(lease ? { lease } : {}) })
    try {
      const value = await fn()
      record({ type: 'complete', ...actor, op: id, at: historyNow(), outcome: 'ok' })
      return { value, id }
    } catch (error) {
      record({ type: 'complete', ...actor, op: id, at: historyNow(), outcome: 'error', code: isBatonError(error) ? error.code : 'UNEXPECTED', message: String((error as Error)?.message ?? error).slice(0, 200) })
      return { error, id }
    }
  }
  while (!stopping()) {
    const acquired = await op('acquire', () => lock.acquire({ wait: settings.ttlMs * 10 }))
    if (!acquired.value) {
      // Unavailable stores and timeouts are the faults under test: pause, go on.
      if (!isBatonError(acquired.error)) throw acquired.error
      await sleep(50)
      continue
    }
    const lease = acquired.value
    const id = `p${actor.process}c0l${seq}`
    const token = lease.token.toString()
    // The lease's deadline is monotonic: what is left of it now gives its end on the history's clock.
    const grantedAt = historyNow()
    record({ type: 'grant', ...actor, op: acquired.id, lease: id, primitive: 'mutex', name, mode: 'exclusive', token, weight: 1, permits: 1, at: grantedAt, deadline: grantedAt + lease.remainingMs() })
    const lost = () => record({ type: 'loss', ...actor, lease: id, at: historyNow(), ...(isBatonError(lease.signal.reason) ? { code: lease.signal.reason.code } : {}) })
    if (lease.signal.aborted) lost()
    else lease.signal.addEventListener('abort', lost, { once: true })
    send({ type: 'holding', held: true })
    const endAt = grantedAt + settings.holdMs
    while (!stopping() && historyNow() < endAt && !lease.signal.aborted) {
      const read = await ask<Extract<VerifierMessage, { type: 'read' }>>({ type: 'read', id: nextId++, token })
      if (!read.accepted) break // a later holder came in: this hold is over
      await sleep(Math.random() * 5)
      if (lease.signal.aborted) break
      const write = await ask<Extract<VerifierMessage, { type: 'write' }>>({ type: 'write', id: nextId++, token, lease: id, value: read.value + 1, readVersion: read.version })
      if (!write.accepted) break // a later holder wrote: this hold is over
      await sleep(Math.random() * 10)
    }
    // From here on it writes nothing under this token.
    record({ type: 'end', ...actor, lease: id, at: historyNow(), why: 'release' })
    send({ type: 'holding', held: false })
    await op('release', () => lease.release(), id)
  }
}

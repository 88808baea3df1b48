/**
 * One `baton verify` worker: takes the lock, does fenced read-modify-write
 * cycles on the verifier's resource for a while, lets go, again — the way a
 * careful user's job would: it stops writing once the lease's signal fires
 * or the resource refuses its token, and it renews nothing (so a pause past
 * the ttl really lets the next holder in).
 *
 * A store that does not answer (restarted, failed over, cut off) is a fault
 * the run goes through, not the end of the worker: every call, connect
 * included, is tried again, and each failure is reported as unavailability.
 */
import { type Baton, type BatonError, connect, isBatonError } from '../../index.js'
import { historyNow } from './clock.js'
import type { VerifierMessage, WorkerMessage, WorkerSettings } from './protocol.js'

/** The errors that say the store did not answer, as against a refusal or a defect. */
const isUnavailable = (error: unknown): error is BatonError =>
  isBatonError(error) && (error.code === 'BACKEND_UNAVAILABLE' || error.code === 'QUORUM_NOT_REACHED')

export async function runWorker(settings: WorkerSettings): Promise<void> {
  const send = (message: WorkerMessage) => process.send!(message)
  const pending = new Map<number, (reply: VerifierMessage) => void>()
  let stopping = false
  let nextId = 1
  process.on('message', (message: VerifierMessage) => {
    if (message.type === 'stop') stopping = true
    else pending.get(message.id)?.(message)
  })
  // The verifier going away (killed, crashed) ends the worker: no orphan keeps contending.
  process.on('disconnect', () => process.exit(0))
  const ask = <R extends VerifierMessage>(message: WorkerMessage & { id: number }) =>
    new Promise<R>((resolve) => {
      pending.set(message.id, (reply) => { pending.delete(message.id); resolve(reply as R) })
      send(message)
    })
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
  const unavailable = (during: 'connect' | 'acquire' | 'release', error: BatonError) =>
    send({ type: 'unavailable', during, at: historyNow(), message: `${error.code}: ${error.message.replace(/^baton: /, '')}` })

  let baton: Baton | undefined
  for (let backoff = 50; baton === undefined && !stopping; backoff = Math.min(backoff * 2, 1000)) {
    try {
      baton = await connect(settings.url)
    } catch (error) {
      if (!isUnavailable(error)) throw error
      unavailable('connect', error)
      await sleep(backoff)
    }
  }
  if (baton === undefined) return
  const lock = baton.mutex(settings.name, { ttl: settings.ttlMs, reentrant: false })
  try {
    while (!stopping) {
      const asked = historyNow()
      let lease
      try {
        lease = await lock.acquire({ wait: settings.ttlMs * 10 })
      } catch (error) {
        // Unavailable stores and timeouts are the faults under test: report, pause, go on.
        if (!isBatonError(error)) throw error
        if (isUnavailable(error)) unavailable('acquire', error)
        await sleep(50)
        continue
      }
      const token = lease.token.toString()
      // Both ends of the hold on the history's clock: the lease's deadline is
      // monotonic, so what is left of it now gives its end on that clock.
      const grantedAt = historyNow()
      const validUntil = grantedAt + lease.remainingMs()
      send({ type: 'granted', token, at: grantedAt, validUntil, waitedMs: Math.round(grantedAt - asked) })
      const endAt = grantedAt + settings.holdMs
      while (!stopping && historyNow() < endAt && !lease.signal.aborted) {
        const read = await ask<Extract<VerifierMessage, { type: 'read' }>>({ type: 'read', id: nextId++, token })
        if (!read.accepted) break // a later holder came in: this hold is over
        await sleep(Math.random() * 5)
        if (lease.signal.aborted) break
        const write = await ask<Extract<VerifierMessage, { type: 'write' }>>({ type: 'write', id: nextId++, token, value: read.value + 1, readVersion: read.version })
        if (!write.accepted) break // a later holder wrote: this hold is over
        await sleep(Math.random() * 10)
      }
      send({ type: 'ended', token, at: historyNow() })
      await lease.release().catch((error: unknown) => { if (isUnavailable(error)) unavailable('release', error) })
    }
  } finally {
    await baton.close().catch(() => {})
  }
}

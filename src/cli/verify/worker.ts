/**
 * One `baton verify` worker: takes the lock, does fenced read-modify-write
 * cycles on the verifier's resource for a while, lets go, again — the way a
 * careful user's job would: it stops writing once the lease's signal fires
 * or the resource refuses its token, and it renews nothing (so a pause past
 * the ttl really lets the next holder in).
 */
import { connect } from '../../connect.js'
import { isBatonError } from '../../core/errors.js'
import type { VerifierMessage, WorkerMessage, WorkerSettings } from './protocol.js'

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

  const baton = await connect(settings.url)
  const lock = baton.mutex(settings.name, { ttl: settings.ttlMs, reentrant: false })
  try {
    while (!stopping) {
      const asked = Date.now()
      let lease
      try {
        lease = await lock.acquire({ wait: settings.ttlMs * 10 })
      } catch (error) {
        // Unavailable stores and timeouts are the faults under test: report, pause, go on.
        if (!isBatonError(error)) throw error
        await sleep(50)
        continue
      }
      const token = lease.token.toString()
      send({ type: 'granted', token, at: Date.now(), validUntil: lease.expiresAt, waitedMs: Date.now() - asked })
      const endAt = Date.now() + settings.holdMs
      while (!stopping && Date.now() < endAt && !lease.signal.aborted) {
        const read = await ask<Extract<VerifierMessage, { type: 'read' }>>({ type: 'read', id: nextId++, token })
        if (!read.accepted) break // a later holder came in: this hold is over
        await sleep(Math.random() * 5)
        if (lease.signal.aborted) break
        const write = await ask<Extract<VerifierMessage, { type: 'write' }>>({ type: 'write', id: nextId++, token, value: read.value + 1, readVersion: read.version })
        if (!write.accepted) break // a later holder wrote: this hold is over
        await sleep(Math.random() * 10)
      }
      send({ type: 'ended', token, at: Date.now() })
      await lease.release().catch(() => {})
    }
  } finally {
    await baton.close().catch(() => {})
  }
}

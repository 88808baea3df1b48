/**
 * What the paused-holder tests (paused.ts) and their worker (worker.ts, task
 * 'freeze') hold and look at: a lease, a leadership and a multi-lock set,
 * with each signal taken before the pause, as code that keeps it would.
 */
import type { Baton } from '../../src/index.js'

/** What one look at a hold saw. */
export interface Look {
  what: string
  /** The signal taken before the pause. */
  aborted: boolean
  code: string | undefined
  held: boolean
  /** The signal read again from the hold. */
  fresh: boolean
}

export type Holds = Awaited<ReturnType<typeof holdAll>>

/** Whether the client's store offers leader election (Redlock refuses it). */
export const elects = (client: Baton): boolean => client.driver.electionRefusal === undefined

export async function holdAll(client: Baton, name: string, ttl: number) {
  const holds = {
    lease: await client.mutex(name, { ttl }).acquire({ autoExtend: true }),
    leadership: elects(client) ? await client.election(`${name}/leader`, { ttl }).campaign() : undefined,
    set: await client.multi([`${name}/m1`, `${name}/m2`], { ttl }).acquire(),
  }
  const signals = { lease: holds.lease.signal, leadership: holds.leadership?.signal, set: holds.set.signal }
  /** Each hold's signal taken before is read first: it must be right before any getter of its hold ran. */
  const look = (): Look[] => Object.entries(holds).flatMap(([what, hold]) => {
    const signal = signals[what as keyof typeof signals]
    if (!hold || !signal) return []
    return [{ what, aborted: signal.aborted, code: (signal.reason as { code?: string } | undefined)?.code, held: hold.held, fresh: hold.signal.aborted }]
  })
  /** Longest time left of any part, by the monotonic clock. */
  const remainingMs = () => Math.max(holds.lease.remainingMs(), holds.leadership?.lease.remainingMs() ?? 0, ...holds.set.leases.map((l) => l.remainingMs()))
  return { ...holds, look, remainingMs }
}

/**
 * Renews each hold now (the lease, the leadership's lease, the set); resolves
 * with how each call ended: 'extended', or the error's code. A renewal sent
 * before a pause and read after it must never say 'extended' for a hold that
 * lapsed meanwhile: the caller would take it for another ttl.
 */
export function renewAll(holds: Holds): Promise<{ what: string; outcome: string }[]> {
  const calls: [string, Promise<void>][] = [['lease', holds.lease.extend()], ['set', holds.set.extend()]]
  if (holds.leadership) calls.push(['leadership', holds.leadership.lease.extend()])
  return Promise.all(calls.map(async ([what, call]) => ({ what, outcome: await call.then(() => 'extended', (e: { code?: string }) => e.code ?? String(e)) })))
}

/** Each look of a paused holder is made on holds of its own, so no look is helped by an earlier one. */
export const LOOKS = ['sync', 'immediate', 'timer'] as const

export const LAPSED = { aborted: true, code: 'LEASE_LOST', held: false, fresh: true }

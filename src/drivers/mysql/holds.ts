import type { AcquireRequest, AcquireResult, ExtendResult, HoldRef, LockSpec } from '../../core/driver.js'
import { describeConflict, weightOf } from '../../core/compat.js'
import { admitsNow, retryAfter, takenSlots } from '../../core/hold-table.js'
import {
  clientOf, grantHold, lockExisting, readState, serve, summary, US, writeWakes, type NameRow,
} from './name-state.js'
import type { Transactions } from './tx.js'

/**
 * The operations that change holds, each one transaction under the name's
 * row lock applying the grant rules of src/core/hold-table.ts to the rows
 * it read (name-state.ts): acquire, renew, release, downgrade, proclaim,
 * force release. Each leaves wake-up rows for the clients it hands the name
 * to or takes it from.
 */
export class Holds {
  constructor(private readonly transactions: Transactions, private readonly clientId: string) {}

  async acquire(request: AcquireRequest): Promise<AcquireResult> {
    return this.transactions.transaction(async (tx) => {
      tx.write('lock-name', [request.name, request.kind, request.fair, request.permits])
      const state = await readState(tx, request.name)
      const now = state.now
      // A hand-over may be due before anything else (a lease or lock delay ran out, a stale head).
      await serve(tx, state)
      if (state.holds.some((h) => h.blockedUntil <= now)) {
        tx.write('drop-past-holds', [request.name, now])
        state.holds = state.holds.filter((h) => h.blockedUntil > now)
      }

      const inUse = state.holds.length > 0 || state.line.some((w) => w.staleAt > now)
      if (state.kind !== request.kind || state.permits !== request.permits || state.fair !== request.fair) {
        const conflict = inUse ? describeConflict(state, request) : undefined
        if (conflict) {
          await writeWakes(tx, state)
          return { status: 'conflict', detail: conflict }
        }
        if (!inUse) {
          tx.write('set-kind', [request.kind, request.fair, request.permits, request.name])
          Object.assign(state, { kind: request.kind, fair: request.fair, permits: request.permits })
        }
      }

      const mine = state.holds.find((h) => h.owner === request.owner && h.expiresAt > now)
      if (mine) {
        await writeWakes(tx, state)
        return { status: 'granted', token: mine.token, ttlMs: Math.max(0, Math.floor((mine.expiresAt - now) / US)) }
      }
      const weight = request.kind === 'semaphore' ? weightOf(request) : 1
      const taken = takenSlots(state.holds, now)
      if (admitsNow(taken, state.line, { owner: request.owner, mode: request.mode, weight, fair: request.fair }, state.permits, now)) {
        const token = await grantHold(tx, state, {
          owner: request.owner, mode: request.mode, weight, ttlMs: request.ttlMs, lockDelayMs: request.lockDelayMs,
          description: request.description ?? null, value: request.value ?? null,
        })
        await writeWakes(tx, state)
        return { status: 'granted', token, ttlMs: request.ttlMs }
      }

      if (request.enqueue) {
        const staleAt = now + Math.ceil(request.queueTtlMs) * US
        const queued = state.line.find((w) => w.owner === request.owner)
        if (queued) {
          tx.write('refresh-entry', [staleAt, request.name, request.owner])
          queued.staleAt = staleAt
        } else {
          tx.write('enqueue', [
            request.name, request.owner, request.mode, weight, request.ttlMs, request.lockDelayMs, staleAt,
            request.description ?? null, Math.floor(now / US), request.value ?? null,
          ])
          state.line.push({
            owner: request.owner, mode: request.mode, weight, staleAt, ttlMs: request.ttlMs, lockDelayMs: request.lockDelayMs,
            description: request.description ?? null, since: Math.floor(now / US), value: request.value ?? null,
          })
        }
      }
      await writeWakes(tx, state)
      const wait = retryAfter(taken, state.line, request.owner, Math.ceil(request.queueTtlMs) * US, now)
      const first = [...state.holds].filter((h) => h.expiresAt > now).sort((a, b) => a.expiresAt - b.expiresAt)[0]
      return { status: 'busy', retryAfterMs: Math.max(1, Math.ceil(wait / US)), ...(first ? { holder: summary(first) } : {}) }
    })
  }

  async extend(holds: readonly HoldRef[], ttlMs: number): Promise<ExtendResult[]> {
    if (holds.length === 0) return []
    const keys = holds.map((h) => [h.name, h.owner, h.token.toString()])
    const renewed = await this.transactions.transaction(async (tx) => {
      const live = await tx.read<{ name: Buffer; owner: Buffer; token: string; now_us: string }>('live-holds', [keys])
      if (live.length === 0) return new Set<string>()
      const now = Number(live[0]!.now_us)
      const found = live.map((r) => [r.name.toString('utf8'), r.owner.toString('utf8'), r.token])
      tx.write('renew', [now + ttlMs * US, now + ttlMs * US, found])
      return new Set(found.map((k) => k.join('\u0000')))
    })
    return keys.map((k) => (renewed.has(k.join('\u0000')) ? { status: 'extended', ttlMs } : { status: 'lost' }))
  }

  async release(hold: HoldRef | (LockSpec & { owner: string })): Promise<boolean> {
    const token = 'token' in hold ? hold.token.toString() : null
    return this.transactions.transaction(async (tx) => {
      const state = await lockExisting(tx, hold.name)
      if (!state) return false
      const result = await tx.exec('release-hold', [hold.name, hold.owner, state.now, token, token])
      const released = result.affectedRows > 0
      if (released) {
        state.holds = state.holds.filter((h) => h.owner !== hold.owner)
        // Another client's hold (a lock server releasing a lease another server granted): its client is told.
        if (!hold.owner.startsWith(`${this.clientId}.`)) state.wakes.push([clientOf(hold.owner), `d|${hold.owner}`])
      } else if (state.line.some((w) => w.owner === hold.owner)) {
        tx.write('leave-line', [hold.name, [hold.owner]])
        state.line = state.line.filter((w) => w.owner !== hold.owner)
      } else {
        return false
      }
      tx.write('touch', [state.now, hold.name])
      await serve(tx, state)
      await writeWakes(tx, state)
      return released
    })
  }

  async downgrade(hold: HoldRef): Promise<boolean> {
    return this.transactions.transaction(async (tx) => {
      const state = await lockExisting(tx, hold.name)
      if (!state) return false
      const result = await tx.exec('downgrade', [hold.name, hold.owner, hold.token.toString(), state.now])
      if (result.affectedRows === 0) return false
      state.holds = state.holds.map((h) => (h.owner === hold.owner ? { ...h, mode: 'read' } : h))
      tx.write('touch', [state.now, hold.name])
      await serve(tx, state)
      await writeWakes(tx, state)
      return true
    })
  }

  async proclaim(hold: HoldRef, value: string): Promise<boolean> {
    return this.transactions.transaction(async (tx) => {
      const [row] = await tx.read<NameRow>('read-name', [hold.name])
      if (!row) return false
      const result = await tx.exec('proclaim', [value, hold.name, hold.owner, hold.token.toString(), row.now_us])
      if (result.affectedRows === 0) return false
      tx.write('touch', [row.now_us, hold.name])
      return true
    })
  }

  async forceRelease(name: string): Promise<boolean> {
    return this.transactions.transaction(async (tx) => {
      const state = await lockExisting(tx, name)
      if (!state) return false
      tx.write('drop-all', [name, name])
      let dropped = 0
      for (const hold of state.holds) {
        // A lock-delay leftover (expired, still blocking) counts as freed, as on every store; its owner is not told.
        if (hold.expiresAt <= state.now) {
          if (hold.blockedUntil > state.now) dropped++
          continue
        }
        dropped++
        state.wakes.push([clientOf(hold.owner), `l|${hold.owner}|released by force (forceRelease)`])
      }
      for (const entry of state.line) if (entry.staleAt > state.now) state.wakes.push([clientOf(entry.owner), `r|${entry.owner}`])
      tx.write('touch', [state.now, name])
      await writeWakes(tx, state)
      return dropped > 0
    })
  }
}

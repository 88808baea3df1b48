import { monotonicNow } from '../../core/clock.js'
import type { LineEntry } from '../sequenced/line.js'
import type { Slot } from '../sequenced/slots.js'
import type { ClientLease } from './lease.js'

/** An entry of this client: its key (the slot id), value and the lease it rides on. */
export interface EtcdSlot extends Slot {
  value: string
  /**
   * A leader election candidate: `value` is the bare announced value (etcd's
   * election layout), not baton's spec; the key is known as this owner's
   * by its id alone (Lines.candidates).
   */
  candidate: boolean
  lease: ClientLease
  /**
   * The entries before this waiter as of `seenAt`, kept current from the
   * name's watch: entries can only leave or change mode there (a new key
   * always lands behind), so the watch alone tells when it may hold.
   */
  ahead?: Map<string, LineEntry>
  seenAt?: bigint
}

/** The hold's own ttl, but never past what the lease surely covers. */
export function ttlLeft(slot: EtcdSlot): number {
  return Math.max(0, Math.floor(Math.min(slot.endsAt - monotonicNow(), slot.lease.remainingMs())))
}

/**
 * The key is still this hold's: the same create revision (its token), as
 * etcd's Election.Proclaim checks. Not its value: a proclaim (through this
 * client or another sharing the store, a lock server's peer) changes it,
 * and must never make the holder's renewal fail.
 */
export function sameEntry(slot: EtcdSlot) {
  return { key: Buffer.from(slot.id), target: 'Create' as const, result: 'Equal' as const, create_revision: String(slot.token) }
}

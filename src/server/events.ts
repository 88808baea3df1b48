import type { HoldMode, LockKind } from '../core/driver.js'
import { ownerDigest } from './lease-id.js'

export type PublicEventType = 'grant' | 'release' | 'expire' | 'lost'

/** What the server tells about a lease: never the owner, only its digest. */
export interface PublicEvent {
  type: PublicEventType
  name: string
  kind: LockKind
  owner: string
  token: string
  mode: HoldMode
  store: string
  /** For grants: how long the request waited, in ms. */
  waitedMs?: number
  /** Epoch ms by this server's clock. */
  at: number
}

/** The parts of a hold an event is about. */
export interface EventHold {
  readonly name: string
  readonly owner: string
  readonly token: bigint
  readonly mode: HoldMode
}

export type Counter = (type: PublicEventType, kind: LockKind, waitedMs: number | undefined) => void

export const kindOf = (mode: HoldMode): LockKind => (mode === 'exclusive' ? 'mutex' : mode === 'permit' ? 'semaphore' : 'rwlock')

/**
 * Grants, releases, expiries and losses of the leases this server handed
 * out, told by the server's lease desk, for SSE streams and metrics. The
 * public event (owner digest, decimal token) is only built when a stream
 * listens: with none, an event costs the metrics counters only.
 */
export class EventHub {
  private readonly listeners = new Set<(event: PublicEvent) => void>()
  private readonly counters = new Set<Counter>()

  constructor(private readonly store: string) {}

  count(counter: Counter): () => void {
    this.counters.add(counter)
    return () => this.counters.delete(counter)
  }

  subscribe(listener: (event: PublicEvent) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  close(): void {
    this.listeners.clear()
    this.counters.clear()
  }

  emit(type: PublicEventType, hold: EventHold, waitedMs?: number): void {
    const kind = kindOf(hold.mode)
    for (const counter of this.counters) counter(type, kind, waitedMs)
    if (this.listeners.size === 0) return
    const out: PublicEvent = {
      type, name: hold.name, kind, owner: ownerDigest(hold.owner), token: hold.token.toString(),
      mode: hold.mode, store: this.store, at: Date.now(),
    }
    if (waitedMs !== undefined) out.waitedMs = waitedMs
    for (const listener of this.listeners) listener(out)
  }
}

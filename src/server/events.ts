import type { HoldMode, LockKind } from '../core/driver.js'
import { randomBytes } from 'node:crypto'
import { publicOwner } from '../core/owner.js'

/** `forced`: a release --force (DELETE /v1/locks/{name}) took the hold, by `by` (the token's name). */
export type PublicEventType = 'grant' | 'release' | 'expire' | 'lost' | 'forced'

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
  /** For forced: who forced it (the name of the admin token, or "open server"). */
  by?: string
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

/** What the ring keeps per event: the raw parts, the public form is built only when sent. */
interface Recorded {
  readonly seq: number
  readonly type: PublicEventType
  readonly hold: EventHold
  readonly waitedMs: number | undefined
  /** For `forced`: the name of the token that forced the release. */
  readonly by: string | undefined
  readonly at: number
}

/** Replay for a stream that resumes with Last-Event-ID. */
export type Resume =
  | { readonly ok: true; readonly events: readonly (PublicEvent & { id: string })[] }
  /** The ring no longer has (or never had) what followed that id: events may have been missed. */
  | { readonly ok: false; readonly reason: string }

/** Events kept for Last-Event-ID resume (default): a few seconds of a busy server. */
export const DEFAULT_EVENT_RING = 10_000

/**
 * Grants, releases, expiries and losses of the leases this server handed
 * out, told by the server's lease desk, for SSE streams and metrics. The
 * public event (owner digest, decimal token) is only built when a stream
 * listens: with none, an event costs the metrics counters only (and, once a
 * stream has ever opened, a slot in the resume ring).
 *
 * Every event has an id, `<server run>-<sequence>`: a stream that reconnects
 * with Last-Event-ID gets what it missed from a bounded ring of the latest
 * events, or is told that the ring no longer has them.
 */
export class EventHub {
  private readonly listeners = new Set<(event: PublicEvent & { id: string }) => void>()
  private readonly counters = new Set<Counter>()
  private readonly enders = new Set<(owner: string) => void>()
  /** Distinguishes this server run's ids from another's (a restart, another server). */
  private readonly run = randomBytes(4).toString('hex')
  private seq = 0
  private ring: (Recorded | undefined)[] | undefined
  /** The first sequence number the ring recorded (it starts with the first stream). */
  private ringFrom = 1

  constructor(private readonly store: string, private readonly ringSize = DEFAULT_EVENT_RING) {}

  /** `listener` hears the owner of every lease that ended (released, expired, lost). */
  ends(listener: (owner: string) => void): void {
    this.enders.add(listener)
  }

  /** A lease ended that this server renewed but did not grant: its enders hear it (quotas), nobody else does. */
  ended(owner: string): void {
    for (const ender of this.enders) ender(owner)
  }

  count(counter: Counter): () => void {
    this.counters.add(counter)
    return () => this.counters.delete(counter)
  }

  subscribe(listener: (event: PublicEvent & { id: string }) => void): () => void {
    if (!this.ring) {
      this.ring = new Array(this.ringSize)
      this.ringFrom = this.seq + 1
    }
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** The id of the latest event (for a stream's first line, so even a quiet stream can resume). */
  get lastId(): string {
    return `${this.run}-${this.seq}`
  }

  /** The events after `lastEventId`, from the ring; call in the same tick as subscribe() so none falls between. */
  since(lastEventId: string): Resume {
    const match = /^([0-9a-f]{8})-(\d+)$/.exec(lastEventId.trim())
    if (!match || match[1] !== this.run) {
      return { ok: false, reason: 'this Last-Event-ID is not from this server run (it restarted, or it is another server): events may have been missed' }
    }
    const after = Number(match[2])
    if (after > this.seq) return { ok: false, reason: 'this Last-Event-ID is ahead of this server: events may have been missed' }
    const oldest = Math.max(this.ringFrom, this.seq - this.ringSize + 1)
    if (after + 1 < oldest) {
      return { ok: false, reason: `the server keeps the latest ${this.ringSize} events and no longer has the ones after this id: events were missed` }
    }
    const events: (PublicEvent & { id: string })[] = []
    for (let seq = after + 1; seq <= this.seq; seq++) {
      const recorded = this.ring![seq % this.ringSize]
      if (recorded?.seq === seq) events.push(this.publicOf(recorded))
    }
    return { ok: true, events }
  }

  close(): void {
    this.listeners.clear()
    this.counters.clear()
    this.enders.clear()
  }

  emit(type: PublicEventType, hold: EventHold, waitedMs?: number, by?: string): void {
    const kind = kindOf(hold.mode)
    for (const counter of this.counters) counter(type, kind, waitedMs)
    if (type !== 'grant') for (const ender of this.enders) ender(hold.owner)
    const seq = ++this.seq
    if (!this.ring) return
    const recorded: Recorded = { seq, type, hold: { name: hold.name, owner: hold.owner, token: hold.token, mode: hold.mode }, waitedMs, by, at: Date.now() }
    this.ring[seq % this.ringSize] = recorded
    if (this.listeners.size === 0) return
    const out = this.publicOf(recorded)
    for (const listener of this.listeners) listener(out)
  }

  private publicOf(recorded: Recorded): PublicEvent & { id: string } {
    const { hold } = recorded
    const out: PublicEvent & { id: string } = {
      id: `${this.run}-${recorded.seq}`, type: recorded.type, name: hold.name, kind: kindOf(hold.mode), owner: publicOwner(hold.owner),
      token: hold.token.toString(), mode: hold.mode, store: this.store, at: recorded.at,
    }
    if (recorded.waitedMs !== undefined) out.waitedMs = recorded.waitedMs
    if (recorded.by !== undefined) out.by = recorded.by
    return out
  }
}

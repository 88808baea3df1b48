import diagnostics_channel from 'node:diagnostics_channel'
import type { HoldMode, LockKind } from '../core/driver.js'
import type { AcquireEvent, HoldEvent, LostEvent } from '../core/events.js'
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

/** After the local loss timer: past the safety margin, so the store has let the lease go if nobody renewed it. */
const EXPIRY_CHECK_MS = 100
/** A lease with more than this left after its local loss timer fired was renewed through another server. */
const RENEWED_ELSEWHERE_MS = 60_000

export const kindOf = (mode: HoldMode): LockKind => (mode === 'exclusive' ? 'mutex' : mode === 'permit' ? 'semaphore' : 'rwlock')

/**
 * Turns the library's diagnostics-channel messages about this server's
 * client into public events, for SSE streams and metrics. Only holds of this
 * server's client (owner `<clientId>.…`) count: an embedding process may run
 * other clients too.
 */
export class EventHub {
  private readonly listeners = new Set<(event: PublicEvent) => void>()
  /** Metrics: told the type, store, kind and wait only, so the hot path computes no owner digest for them. */
  private readonly counters = new Set<(type: PublicEventType, store: string, kind: LockKind, waitedMs: number | undefined) => void>()
  private readonly subscriptions: [string, (message: unknown) => void][] = []

  constructor(private readonly clientId: string, private readonly inspect: (name: string) => Promise<{ holders: { owner: string; expiresAt: number }[] } | null>) {
    const mine = (event: HoldEvent) => event.owner.startsWith(`${this.clientId}.`)
    this.on('baton:acquire', (m) => {
      const event = m as AcquireEvent
      if (mine(event) && !event.reentered) this.emit('grant', event, Math.round(event.waitedMs))
    })
    this.on('baton:release', (m) => {
      if (mine(m as HoldEvent)) this.emit('release', m as HoldEvent)
    })
    this.on('baton:lost', (m) => {
      const event = m as LostEvent
      if (!mine(event)) return
      if (event.expired) this.confirmExpiry(event)
      else this.emit('lost', event)
    })
  }

  count(counter: (type: PublicEventType, store: string, kind: LockKind, waitedMs: number | undefined) => void): () => void {
    this.counters.add(counter)
    return () => this.counters.delete(counter)
  }

  subscribe(listener: (event: PublicEvent) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  close(): void {
    for (const [channel, handler] of this.subscriptions) diagnostics_channel.unsubscribe(channel, handler)
    this.listeners.clear()
    this.counters.clear()
  }

  /**
   * This server's copy of a lease runs out by its own timer, shortly before
   * the store lets it go; the lease may also have been extended through
   * another server sharing the store. So an expiry is reported only once the
   * store confirms the owner no longer holds the name.
   */
  private confirmExpiry(event: HoldEvent, checksLeft = 3, delayMs = EXPIRY_CHECK_MS): void {
    if (this.listeners.size === 0 && this.counters.size === 0) return
    const timer = setTimeout(() => {
      this.inspect(event.name).then(
        (view) => {
          const held = view?.holders.find((h) => h.owner === event.owner)
          if (!held) return this.emit('expire', event)
          const left = held.expiresAt - Date.now()
          // Still within this server's safety margin: look again once the store's lease is over.
          // Far from over: renewed through another server; it is not expired.
          if (checksLeft > 1 && left < RENEWED_ELSEWHERE_MS) this.confirmExpiry(event, checksLeft - 1, Math.max(0, left) + EXPIRY_CHECK_MS)
        },
        () => this.emit('expire', event), // the store does not answer: the lease can not be renewed either
      )
    }, delayMs)
    timer.unref()
  }

  private on(channel: string, handler: (message: unknown) => void): void {
    diagnostics_channel.subscribe(channel, handler)
    this.subscriptions.push([channel, handler])
  }

  private emit(type: PublicEventType, event: HoldEvent, waitedMs?: number): void {
    for (const counter of this.counters) counter(type, event.store, kindOf(event.mode), waitedMs)
    if (this.listeners.size === 0) return
    const out: PublicEvent = {
      type, name: event.name, kind: kindOf(event.mode), owner: ownerDigest(event.owner), token: event.token.toString(),
      mode: event.mode, store: event.store, at: Date.now(),
    }
    if (waitedMs !== undefined) out.waitedMs = waitedMs
    for (const listener of this.listeners) listener(out)
  }
}

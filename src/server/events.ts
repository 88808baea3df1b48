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

export const kindOf = (mode: HoldMode): LockKind => (mode === 'exclusive' ? 'mutex' : mode === 'permit' ? 'semaphore' : 'rwlock')

/**
 * Turns the library's diagnostics-channel messages about this server's
 * client into public events, for SSE streams and metrics. Only holds of this
 * server's client (owner `<clientId>.…`) count: an embedding process may run
 * other clients too.
 */
export class EventHub {
  private readonly listeners = new Set<(event: PublicEvent) => void>()
  private readonly subscriptions: [string, (message: unknown) => void][] = []

  constructor(private readonly clientId: string) {
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
      if (mine(event)) this.emit(event.expired ? 'expire' : 'lost', event)
    })
  }

  subscribe(listener: (event: PublicEvent) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  close(): void {
    for (const [channel, handler] of this.subscriptions) diagnostics_channel.unsubscribe(channel, handler)
    this.listeners.clear()
  }

  private on(channel: string, handler: (message: unknown) => void): void {
    diagnostics_channel.subscribe(channel, handler)
    this.subscriptions.push([channel, handler])
  }

  private emit(type: PublicEventType, event: HoldEvent, waitedMs?: number): void {
    if (this.listeners.size === 0) return
    const out: PublicEvent = {
      type, name: event.name, kind: kindOf(event.mode), owner: ownerDigest(event.owner), token: event.token.toString(),
      mode: event.mode, store: event.store, at: Date.now(),
    }
    if (waitedMs !== undefined) out.waitedMs = waitedMs
    for (const listener of this.listeners) listener(out)
  }
}

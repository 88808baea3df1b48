import type { Event } from 'node-zookeeper-client'
import type { Slot } from '../sequenced/slots.js'
import type { ZkSession } from './session.js'

/** An entry of this client: its node (the slot id), on one of this client's sessions. */
export interface ZkSlot extends Slot {
  readonly session: ZkSession
  /** The node's data: who asked (encodeNote), written again as is by a downgrade; a candidate's value (proclaim rewrites it). */
  note: string
  /**
   * The watchers this slot sets, one function each for its life: the client
   * library keeps a watcher function once per path, so setting them again
   * (every refresh, every reconnect) adds nothing.
   */
  onBlockerChange?: (event: Event) => void
  onOwnChange?: (event: Event) => void
  /** An entry with a lock delay: its alive marker and the session (of its ttl alone) the marker is on. */
  readonly alive?: { readonly path: string; readonly session: ZkSession }
}

import { blockersOf, decodeEntry, type LineEntry } from '../sequenced/line.js'
import type { Slots } from '../sequenced/slots.js'
import type { LineMarker, Lines } from './keys.js'
import { ttlLeft, type EtcdSlot } from './slot.js'
import type { Change, NameWatch, NameWatches, WatchEvents } from './watches.js'

/**
 * Wake-ups of this client's waiters from their names' watches: each waiter
 * keeps the entries before it as of its line read, applies the changes the
 * watch reports after that read, and holds once none of them blocks it (no
 * extra read). A watch that may have missed changes has its line read again.
 */
export class WakeUps implements WatchEvents {
  /** Set once the watches exist (they report to this). */
  watches!: NameWatches

  constructor(private readonly slots: Slots<EtcdSlot>, private readonly lines: Lines) {}

  /**
   * Waits behind the line as read at `marker.revision`: changes the watch
   * reported since then are applied at once, later ones as they come; the
   * waiter holds when no entry before it blocks it any more (no extra read).
   */
  standBehind(slot: EtcdSlot, _blockers: readonly LineEntry[], marker: unknown): void {
    const { line, revision } = marker as LineMarker
    const index = line.findIndex((e) => e.id === slot.id)
    slot.ahead = new Map(line.slice(0, index).map((e) => [e.id, e]))
    slot.seenAt = revision
    const changed = this.watches.get(slot.name)?.changed
    const own = changed?.get(slot.id)
    if (own?.deleted && own.revision > revision) return this.slots.gone(slot, 'its key was deleted')
    let moved = false
    for (const id of [...slot.ahead.keys()]) {
      const change = changed?.get(id)
      if (change && change.revision > revision) moved = this.apply(slot, id, change) || moved
    }
    if (moved) this.settle(slot)
  }

  /** A key of the name changed: its own holder loses it if deleted; waiters behind it apply the change. */
  changed(watch: NameWatch, key: string, change: Change): void {
    for (const slot of watch.slots) {
      if (slot.id === key) {
        if (change.deleted) this.slots.gone(slot, 'the store dropped it (released by force, or this client\'s etcd lease ended)')
      } else if (!slot.held && slot.seenAt !== undefined && change.revision > slot.seenAt && this.apply(slot, key, change)) {
        this.settle(slot)
      }
    }
  }

  /**
   * Reads the name's line again after its watch may have missed changes: a
   * holder whose key went meanwhile loses, a waiter is placed by the fresh
   * line (granted if due, else behind its blockers). Tried again until etcd
   * answers, while the watch is the name's.
   */
  missed(name: string, watch: NameWatch): void {
    const once = async (): Promise<void> => {
      await this.watches.ready(name, watch)
      const read = await this.lines.read(name)
      const marker = { line: read.line, revision: read.revision } satisfies LineMarker
      for (const slot of [...watch.slots]) {
        if (this.slots.get(slot.owner) !== slot) continue
        if (!read.line.some((e) => e.id === slot.id)) {
          this.slots.gone(slot, 'the store dropped it (released by force, or this client\'s etcd lease ended)')
        } else if (!slot.held && this.slots.place(slot, read.line, marker) === 'granted') {
          this.slots.wake(slot.owner, { type: 'granted', token: slot.token, ttlMs: ttlLeft(slot) })
        }
      }
    }
    const attempt = (delayMs: number): void => {
      once().catch(() => {
        if (!this.watches.current(name, watch)) return
        setTimeout(() => attempt(Math.min(delayMs * 2, 5000)), delayMs).unref()
      })
    }
    attempt(250)
  }

  /** One change of an entry before the waiter; true when it matters. */
  private apply(slot: EtcdSlot, id: string, change: Change): boolean {
    const before = slot.ahead?.get(id)
    if (!before) return false
    if (change.deleted) slot.ahead!.delete(id)
    else slot.ahead!.set(id, decodeEntry(id, before.token, change.value, before.owner))
    return true
  }

  /** Holds now if nothing before it blocks it; else waits for its new blockers. */
  private settle(slot: EtcdSlot): void {
    if (slot.held || this.slots.get(slot.owner) !== slot || !slot.ahead) return
    const me: LineEntry = { id: slot.id, owner: slot.owner, kind: slot.kind, mode: slot.mode, permits: slot.permits, weight: slot.weight, fair: true, token: slot.token }
    const line = [...slot.ahead.values(), me]
    const blockers = blockersOf(line, line.length - 1)
    if (blockers.length > 0) {
      slot.blockers = new Set(blockers.map((b) => b.id))
      return
    }
    this.slots.hold(slot)
    this.slots.wake(slot.owner, { type: 'granted', token: slot.token, ttlMs: ttlLeft(slot) })
  }
}

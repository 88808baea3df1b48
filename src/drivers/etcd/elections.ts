import type { Etcd3, Watcher } from 'etcd3'
import type { HoldRef } from '../../core/driver.js'
import { decodeEntry, decodeNote, encodeCandidateValue, encodeNote } from '../sequenced/line.js'
import type { Slots } from '../sequenced/slots.js'
import { guarded, type EtcdTarget } from './connection.js'
import type { Lines } from './keys.js'
import type { EtcdSlot } from './slot.js'
import { resumeFromNow, type NameWatches } from './watches.js'

/**
 * Leader elections on etcd's own layout: a candidate's key holds its bare
 * value (Lines), proclaim puts a new one on the leader's key, and observers
 * of a name share one prefix watch on its line.
 */
export class EtcdElections {
  /** Election observers by name, with the prefix watch that tells them (`<name>/`, as the line's). */
  private readonly observed = new Map<string, { observers: Set<() => void>; ready: Promise<Watcher> }>()

  constructor(
    private readonly client: Etcd3,
    private readonly target: EtcdTarget,
    private readonly lines: Lines,
    private readonly slots: Slots<EtcdSlot>,
    private readonly watches: NameWatches,
  ) {}

  /**
   * etcd's Election.Proclaim: puts the value on the leader's key if its
   * create revision (the token) is unchanged, keeping its lease. A
   * candidate's key keeps the bare value; a plain exclusive hold's keeps
   * its spec, with the value in its note. A hold this client does not know
   * (granted through another client: a lock server's peer on the same
   * store) is found in the line by its token and its owner's part of the key.
   */
  async proclaim(hold: HoldRef, value: string): Promise<boolean> {
    const slot = this.slots.get(hold.owner)
    if (slot && (!slot.held || slot.token !== hold.token || slot.name !== hold.name)) return false
    const found = slot ? { key: slot.id, stored: slot.value, candidate: slot.candidate } : await this.othersLeader(hold)
    if (!found) return false
    let next: string
    if (found.candidate) {
      next = encodeCandidateValue(value)
    } else {
      const newline = found.stored.indexOf('\n')
      const spec = newline >= 0 ? found.stored.slice(0, newline) : found.stored
      next = `${spec}\n${encodeNote({ ...decodeNote(newline >= 0 ? found.stored.slice(newline + 1) : ''), value })}`
    }
    const reply = await guarded(this.target, this.client.kv.txn({
      compare: [{ key: Buffer.from(found.key), target: 'Create', result: 'Equal', create_revision: String(hold.token) }],
      success: [{ request_put: { key: Buffer.from(found.key), value: Buffer.from(next), ignore_lease: true } }],
    }))
    if (!reply.succeeded) {
      if (slot) this.slots.forget(slot)
      return false
    }
    if (slot && this.slots.get(hold.owner) === slot) slot.value = next
    return true
  }

  /**
   * Another client's exclusive hold that leads `hold.name` now (granted
   * through a lock server's peer on the same store): the first key of the
   * line, if its create revision is the token and its last part ends with
   * the owner's own part (`<lease hex>.<owner after its client id>`). A
   * stored value that reads as no baton entry is a candidate's.
   */
  private async othersLeader(hold: HoldRef): Promise<{ key: string; stored: string; candidate: boolean } | undefined> {
    const reply = await guarded(this.target, this.client.kv.range(this.lines.range(hold.name)))
    const prefix = this.lines.prefix(hold.name)
    const first = reply.kvs.find((kv) => !kv.key.toString().slice(prefix.length).includes('/'))
    const key = first?.key.toString()
    if (!first || !key || first.create_revision !== String(hold.token) || !key.endsWith(`.${hold.owner.slice(hold.owner.indexOf('.') + 1)}`)) return undefined
    const stored = first.value.toString()
    const foreign = '\u0000'
    return { key, stored, candidate: decodeEntry(key, 0n, stored, foreign).owner === foreign }
  }

  /**
   * A watch on the name's line prefix: every put (a new candidate, a
   * proclaim, a lease move) and delete (a resign, a lease that ran out,
   * a forced release) is a notice; so is a reconnect, after which what
   * changed meanwhile is read, not replayed.
   */
  observe(name: string, onChange: () => void): () => void {
    let entry = this.observed.get(name)
    if (!entry) {
      const observers = new Set<() => void>()
      const tell = () => { for (const each of observers) each() }
      const ready = this.watches.createWatch(this.client.watch().prefix(this.lines.prefix(name)))
      const made = { observers, ready }
      entry = made
      this.observed.set(name, made)
      ready.then((watcher) => {
        watcher.on('put', tell)
        watcher.on('delete', tell)
        watcher.on('disconnected', () => resumeFromNow(watcher))
        watcher.on('connected', tell)
        watcher.on('error', () => {
          // Cancelled by etcd: the next observer of the name makes a new watch; these look once more.
          if (this.observed.get(name) === made) this.observed.delete(name)
          tell()
        })
        // Once watching, a look: a change before the watch started is not missed.
        tell()
      }, () => {
        if (this.observed.get(name) === made) this.observed.delete(name)
      })
    }
    const mine = () => onChange()
    const { observers, ready } = entry
    observers.add(mine)
    return () => {
      observers.delete(mine)
      if (observers.size > 0 || this.observed.get(name)?.ready !== ready) return
      this.observed.delete(name)
      void ready.then((w) => w.cancel(), () => {}).catch(() => {})
    }
  }

  /** On close: every observer's watch is cancelled. */
  close(): void {
    for (const { ready } of this.observed.values()) void ready.then((w) => w.cancel(), () => {})
    this.observed.clear()
  }
}

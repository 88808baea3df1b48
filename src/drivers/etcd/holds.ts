import { type Etcd3, EtcdLeaseInvalidError, type IRequestOp, type Watcher } from 'etcd3'
import type { AcquireRequest, AcquireResult, AttemptSpec, ExtendResult, HoldRef } from '../../core/driver.js'
import { weightOf } from '../../core/compat.js'
import { conflictIn, encodeCandidateValue, encodeEntry, encodeNote, type LineEntry } from '../sequenced/line.js'
import { busyIn, newSlot, Slots, STILL_REMOVING, type SlotStore } from '../sequenced/slots.js'
import { guarded, type EtcdTarget } from './connection.js'
import type { LineMarker, Lines } from './keys.js'
import { ALL_DELAY, delayMarkerKey, Leases, lockDelaySeconds, type ClientLease } from './lease.js'
import { sameEntry, ttlLeft, type EtcdSlot } from './slot.js'
import { WakeUps } from './wakeups.js'
import { NameWatches, type NameWatch } from './watches.js'

const LOST: ExtendResult = { status: 'lost' }

/**
 * This client's holds and waiters: one key each, `<name>/<lease id hex>.<hold id>`,
 * on a lease of this client (Leases), in its name's line (Lines); a waiter
 * is woken from its name's watch (WakeUps). Acquire, extend, release and
 * downgrade, and what the shared slot bookkeeping asks of etcd (SlotStore).
 */
export class EtcdHolds implements SlotStore<EtcdSlot> {
  readonly slots = new Slots<EtcdSlot>(this)
  readonly leases: Leases
  readonly watches: NameWatches
  private readonly wakeUps: WakeUps

  constructor(
    private readonly client: Etcd3,
    private readonly target: EtcdTarget,
    private readonly clientId: string,
    private readonly lines: Lines,
    idleWatcher: Watcher,
  ) {
    this.leases = new Leases(client, target, (lease) => this.leaseLost(lease))
    this.wakeUps = new WakeUps(this.slots, lines)
    this.watches = new NameWatches(client, target, lines, this.wakeUps, idleWatcher)
    this.wakeUps.watches = this.watches
  }

  async acquire(request: AcquireRequest, leaseRenewed = false): Promise<AcquireResult> {
    const known = this.slots.get(request.owner)
    if (known?.held) return this.slots.granted(known)
    if (known) return this.refreshWaiter(known, request)

    const watch = this.watches.of(request.name)
    await this.guard(this.watches.ready(request.name, watch))
    const lease = await this.leases.leaseFor(request.ttlMs, request.lockDelayMs)
    // The key is found again by its name: never while this client is deleting it.
    if (!(await this.slots.settled(request.owner))) return STILL_REMOVING
    const key = `${this.lines.prefix(request.name)}${lease.hex}.${request.owner.slice(this.clientId.length + 1)}`
    const candidate = request.value !== undefined
    // Who asked and when (by this client's clock: etcd keeps none), for inspect.
    // A candidate's key holds its bare value, as in etcd's own election layout
    // (see proclaim), escaped only when it would read as a baton entry.
    const value = candidate ? encodeCandidateValue(request.value) : `${encodeEntry(request)}\n${encodeNote({ description: request.description, since: Date.now() })}`
    if (candidate) this.lines.candidates.set(key, request.owner)
    const range = this.lines.range(request.name)
    const put = this.client.kv.txn({
      compare: [{ key: Buffer.from(key), target: 'Create', result: 'Equal', create_revision: 0 }],
      success: [{ request_put: { key: Buffer.from(key), value: Buffer.from(value), lease: lease.id } }, { request_range: range }],
      failure: [{ request_range: range }],
    })
    const reply = await this.guard(put.catch((error: unknown) => {
      if (leaseRenewed || !(error instanceof EtcdLeaseInvalidError)) throw error
      return undefined
    }))
    if (!reply) {
      // The lease ran out while this process stood still (a pause past its
      // ttl) and its keep-alive has not said so yet: every key on it is gone
      // (its holds are lost, its waiters left their lines), so the attempt
      // goes again on a new lease, at the back of the line, once.
      this.lines.candidates.delete(key)
      this.leases.ended(lease)
      return this.acquire(request, true)
    }
    const read = this.lines.parse(request.name, reply.responses[reply.succeeded ? 1 : 0]!.response_range.kvs, BigInt(reply.header.revision))
    const mine = read.line.find((e) => e.id === key)
    // Dropped at once (forced), or already reported deleted by the watch after this read: try again.
    const deletedSince = watch.changed.get(key)
    if (!mine || (deletedSince?.deleted && deletedSince.revision > read.revision)) {
      this.lines.candidates.delete(key)
      return { status: 'busy', retryAfterMs: 1 }
    }
    // A key found again (a retry after a lost reply) is this owner's entry only on the
    // lease it was put on: one moved to a lock delay's lease is an expired hold's phantom.
    if (!reply.succeeded && read.leases.get(key) !== lease.id) return { status: 'busy', retryAfterMs: Math.max(1, request.lockDelayMs) }

    const conflict = conflictIn(read.line, request)
    if (conflict) {
      this.lines.candidates.delete(key)
      await this.slots.remove(request.owner, () => this.deleteOwn(key, mine.token))
      return { status: 'conflict', detail: conflict }
    }
    const slot = newSlot<EtcdSlot>({
      owner: request.owner, name: request.name, id: key, kind: request.kind, mode: request.mode,
      permits: request.permits, weight: weightOf(request), lockDelayMs: request.lockDelayMs, token: mine.token, ttlMs: request.ttlMs, value, lease, candidate,
    })
    this.adopt(slot, watch)
    const placed = this.slots.place(slot, read.line, { line: read.line, revision: read.revision } satisfies LineMarker)
    if (placed === 'granted') return this.slots.granted(slot)
    if (!request.enqueue) {
      this.slots.forget(slot)
      await this.slots.remove(slot.owner, () => this.drop(slot))
    } else if (this.slots.get(slot.owner) === slot) {
      this.slots.keepWaiting(slot, request.queueTtlMs)
    }
    return busyIn(read.line, request.queueTtlMs)
  }

  async extend(holds: readonly HoldRef[], ttlMs: number): Promise<ExtendResult[]> {
    return Promise.all(holds.map(async (hold): Promise<ExtendResult> => {
      const slot = this.slots.get(hold.owner)
      if (!slot || !slot.held || slot.name !== hold.name || slot.token !== hold.token) return LOST
      const lease = await this.leases.leaseFor(ttlMs, hold.lockDelayMs)
      // A new ttl can need a lease of another length: the key moves to it and keeps its create revision.
      const moving = lease !== slot.lease
      const reply = await this.guard(this.client.kv.txn({
        compare: [sameEntry(slot)],
        // The value as etcd has it: a proclaim through another client may have changed it.
        success: moving ? [{ request_put: { key: Buffer.from(slot.id), ignore_value: true, lease: lease.id } }] : [],
      }))
      if (!reply.succeeded || this.slots.get(hold.owner) !== slot) {
        this.slots.forget(slot)
        return LOST
      }
      if (moving) slot.lease = lease
      slot.ttlMs = ttlMs
      this.slots.hold(slot)
      return { status: 'extended', ttlMs: ttlLeft(slot) }
    }))
  }

  async release(hold: HoldRef | AttemptSpec): Promise<boolean> {
    // An attempt whose reply was lost may still have made a key on a live
    // lease: its key is known for each lease (`<lease>.<owner>`, as a retry
    // finds it), and it is deleted again and again until etcd answers.
    const tail = hold.owner.slice(this.clientId.length + 1)
    return this.slots.release(hold, this.clientId, () =>
      this.deleteFound(this.leases.all().map((l) => `${this.lines.prefix(hold.name)}${l.hex}.${tail}`)))
  }

  async downgrade(hold: HoldRef): Promise<boolean> {
    const slot = this.slots.get(hold.owner)
    if (!slot || !slot.held || slot.mode !== 'write' || slot.token !== hold.token) return false
    const note = slot.value.indexOf('\n')
    const value = encodeEntry({ ...hold, mode: 'read' }) + (note >= 0 ? slot.value.slice(note) : '')
    const reply = await this.guard(this.client.kv.txn({
      compare: [{ key: Buffer.from(slot.id), target: 'Value', result: 'Equal', value: Buffer.from(slot.value) }],
      success: [{ request_put: { key: Buffer.from(slot.id), value: Buffer.from(value), lease: slot.lease.id } }],
    }))
    if (!reply.succeeded) {
      this.slots.forget(slot)
      return false
    }
    // Readers waiting on this key see the put on their watch and re-check.
    slot.value = value
    slot.mode = 'read'
    return true
  }

  /** A repeated attempt of a waiter: keeps its place, and re-reads the line in case a wake-up was missed. */
  private async refreshWaiter(slot: EtcdSlot, request: AcquireRequest): Promise<AcquireResult> {
    this.slots.keepWaiting(slot, request.queueTtlMs)
    const read = await this.lines.read(slot.name)
    if (this.slots.get(slot.owner) !== slot) return this.acquire(request)
    if (slot.held) return this.slots.granted(slot)
    const placed = this.slots.place(slot, read.line, { line: read.line, revision: read.revision } satisfies LineMarker)
    if (placed === 'granted') return this.slots.granted(slot)
    if (placed === undefined) {
      this.slots.forget(slot)
      return this.acquire(request)
    }
    return busyIn(read.line, request.queueTtlMs)
  }

  private adopt(slot: EtcdSlot, watch: NameWatch): void {
    this.slots.adopt(slot)
    this.watches.join(slot, watch)
  }

  /** The lease ended (keep-alives failed past its ttl, or etcd revoked it): every key on it is gone. */
  private leaseLost(lease: ClientLease): void {
    for (const slot of [...this.slots.byOwner.values()]) {
      if (slot.lease === lease) this.slots.gone(slot, 'this client\'s etcd lease ended (keep-alives failed past its ttl)')
    }
  }

  // ---- SlotStore ----

  async drop(slot: EtcdSlot): Promise<void> {
    // Even when etcd3 reported the lease lost: etcd may still keep it (a new
    // leader renews every lease), so the key is deleted all the same.
    await this.deleteOwn(slot.id, slot.token)
  }

  /**
   * The key stays where it is in the line (a put keeps its create revision)
   * but moves to a lease of its own, of the delay, that nobody renews: etcd
   * deletes it when the delay is over, whether or not this client lives.
   */
  async keepForLockDelay(slot: EtcdSlot): Promise<void> {
    const { ID } = await this.guard(this.client.leaseClient.leaseGrant({ TTL: lockDelaySeconds(slot.lockDelayMs), ID: 0 }))
    // Only while the key is still this hold's: a forced release ends it without a delay.
    // The lease's marker says it is all lock delay: the key is a phantom from now on (isPhantom).
    await this.guard(this.client.kv.txn({
      compare: [sameEntry(slot)],
      success: [
        { request_put: { key: Buffer.from(slot.id), ignore_value: true, lease: ID } },
        { request_put: { key: Buffer.from(delayMarkerKey(this.target, ID)), value: Buffer.from(ALL_DELAY), lease: ID } },
      ],
    }))
  }

  async readLine(slot: EtcdSlot): Promise<{ line: LineEntry[]; marker: unknown }> {
    const read = await this.lines.read(slot.name)
    return { line: read.line, marker: { line: read.line, revision: read.revision } satisfies LineMarker }
  }

  standBehind(slot: EtcdSlot, blockers: readonly LineEntry[], marker: unknown): void {
    this.wakeUps.standBehind(slot, blockers, marker)
  }

  ttlLeft(slot: EtcdSlot): number {
    return ttlLeft(slot)
  }

  forgotten(slot: EtcdSlot): void {
    if (slot.candidate) this.lines.candidates.delete(slot.id)
    this.watches.leave(slot)
  }

  // ---- deletes ----

  /**
   * Deletes one entry of this client, only as created at `token` (its create
   * revision): a try whose answer was lost and that etcd runs late can never
   * delete the key made again under the same name by a later attempt.
   */
  private async deleteOwn(key: string, token: bigint): Promise<void> {
    await this.guard(this.client.kv.txn({
      compare: [{ key: Buffer.from(key), target: 'Create', result: 'Equal', create_revision: token.toString() }],
      success: [{ request_delete_range: { key: Buffer.from(key) } }],
    }))
  }

  /** Deletes those of `keys` that exist, each only as found (see deleteOwn). */
  private async deleteFound(keys: readonly string[]): Promise<void> {
    const found = await this.guard(Promise.all(keys.map((key) => this.client.kv.range({ key: Buffer.from(key), keys_only: true }))))
    await Promise.all(found.flatMap((reply) => reply.kvs).map((kv) => this.deleteOwn(kv.key.toString(), BigInt(kv.create_revision))))
  }

  /** Deletes `keys` at one revision, whoever made them (forceRelease, close). */
  async deleteKeys(keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return
    const success: IRequestOp[] = keys.map((key) => ({ request_delete_range: { key: Buffer.from(key) } }))
    await this.guard(this.client.kv.txn({ success }))
  }

  private guard<T>(promise: Promise<T>): Promise<T> {
    return guarded(this.target, promise)
  }
}

import type { Etcd3, IRangeRequest, IRequestOp, Lease, WatchBuilder, Watcher } from 'etcd3'
import type {
  AcquireRequest, AcquireResult, Capabilities, Driver, DriverFactory, DriverOptions, ExtendResult,
  HoldRef, HolderSummary, ListPage, LockInfo, LockSpec, Wake,
} from '../../core/driver.js'
import { compareNames, inspectInOrder, limitOf, namesOfPage } from '../../core/list.js'
import { monotonicNow } from '../../core/clock.js'
import { weightOf } from '../../core/compat.js'
import type { StoreUrl } from '../../core/url.js'
import {
  blockersOf, conflictIn, decodeCandidateValue, decodeEntry, decodeNote, encodeCandidateValue, encodeEntry, encodeNote, holdersIn, summaryOf,
  waiterSummaryOf, waitersIn, type LineEntry,
} from '../sequenced/line.js'
import { busyIn, newSlot, Slots, STILL_REMOVING, type Slot, type SlotStore } from '../sequenced/slots.js'
import { etcdDiagnosis, etcdTarget, openEtcd, WatchReconnects, type EtcdTarget } from './connection.js'

const CAPABILITIES: Capabilities = {
  // Lock delay: an expired hold's key moves to a lease of the delay; a crashed client's lease outlives its holds by it.
  fair: true, rwlock: true, semaphore: true, lockDelay: true, handoff: true, durableTokens: true,
}

/** The shortest lease asked for; etcd raises it to its own floor (1.5 × election timeout, 2 s by default). */
export const ETCD_MIN_LEASE_SECONDS = 1
/** A name's watch stays this long after its last entry went, so a hot name keeps one watch. */
const NAME_WATCH_LINGER_MS = 10_000
/** Changes remembered per name, to close the gap between a line read and its watch events. */
const CHANGES_KEPT = 512

/**
 * One etcd lease of this client, kept alive by this class's own timer (one
 * keep-alive at a time, every third of its holds' part), not etcd3's loop: after a
 * stalled stream and a cut, etcd3 can run two loops of one lease and stop only
 * one on release, an interval that keeps the process alive for good. Every
 * entry with the same lease length shares it. `confirmedAt` is when the last
 * acknowledged keep-alive was *sent*: the store keeps the lease at least until
 * confirmedAt + granted, by its own clock.
 */
class ClientLease {
  id = '0'
  hex = '0'
  confirmedAt = 0
  readonly slots = new Set<EtcdSlot>()
  readonly ready: Promise<void>
  private timer: NodeJS.Timeout | undefined
  private stopped = false

  /** What etcd granted: at least `seconds`, raised to its floor (1.5 × election timeout, 2 s by default). */
  granted: number

  constructor(
    /** Made with `autoKeepAlive: false`. */
    readonly lease: Lease,
    /** What this client asked for (the key of its lease map). */
    readonly seconds: number,
    onLost: (lease: ClientLease, error: unknown) => void,
    grantedSeconds: (id: string) => Promise<number>,
    private readonly answerWithinMs: number,
    /**
     * The lock delay this lease adds after its holds' ttl (0 for none); its
     * marker (see delayMarkerKey) is written before the lease is used.
     */
    readonly delaySeconds: number,
    markDelay: (id: string) => Promise<void>,
  ) {
    this.granted = seconds
    const sentAt = monotonicNow()
    // A grant that failed, or a keep-alive etcd answered with "expired".
    lease.on('lost', (error: unknown) => {
      this.stop()
      onLost(this, error)
    })
    this.ready = lease.grant().then(async (id) => {
      this.id = id
      this.hex = BigInt(id).toString(16)
      this.confirmedAt = sentAt
      this.granted = Math.max(seconds, await grantedSeconds(id))
      this.keepAliveIn(this.everyMs())
      if (delaySeconds > 0) await markDelay(id)
    })
  }

  /**
   * How long every client surely counts this lease's holds as held, by our
   * monotonic clock: until the store ends the lease, less its lock delay
   * (after which a key on it is a phantom, see isPhantom).
   */
  remainingMs(): number {
    return this.confirmedAt + (this.granted - this.delaySeconds) * 1000 - monotonicNow()
  }

  /**
   * A third of the holds' part: a live client's lease never falls within its
   * lock delay of its end, which is how other clients tell a crashed
   * client's keys (phantoms for the delay) from live holds.
   */
  private everyMs(): number {
    return (this.granted - this.delaySeconds) * 1000 / 3
  }

  /** No more keep-alives: etcd ends the lease at its ttl (the keys on it with it). */
  stop(): void {
    this.stopped = true
    clearTimeout(this.timer)
    this.lease.release()
  }

  private keepAliveIn(delayMs: number): void {
    if (this.stopped) return
    clearTimeout(this.timer)
    this.timer = setTimeout(() => void this.keepAlive(), delayMs)
  }

  /** One keep-alive; unanswered (etcd3 sets no deadline on it) or failed, it is tried again soon. */
  private async keepAlive(): Promise<void> {
    const sentAt = monotonicNow()
    const everyMs = this.everyMs()
    let deadline: NodeJS.Timeout | undefined
    try {
      await Promise.race([
        this.lease.keepaliveOnce(),
        new Promise((_, reject) => (deadline = setTimeout(() => reject(new Error('no answer')), this.answerWithinMs))),
      ])
      this.confirmedAt = Math.max(this.confirmedAt, sentAt)
      this.keepAliveIn(everyMs)
    } catch {
      // "Expired" has stopped this lease (see 'lost'); anything else is tried again.
      this.keepAliveIn(Math.min(everyMs, 250))
    } finally {
      clearTimeout(deadline)
    }
  }
}

/** An entry of this client: its key (the slot id), value and the lease it rides on. */
interface EtcdSlot extends Slot {
  value: string
  /**
   * A leader election candidate: `value` is the bare announced value (etcd's
   * election layout), not baton's spec; the key is known as this owner's
   * by its id alone (EtcdDriver.candidates).
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

/** A key's last change seen on a name's watch. */
interface Change {
  readonly revision: bigint
  readonly deleted: boolean
  readonly value: string
}

/** A line read and the revision it was read at. */
interface LineMarker {
  readonly line: readonly LineEntry[]
  readonly revision: bigint
}

/** One prefix watch per name in use by this client; each waiter reacts only to its blockers' changes. */
interface NameWatch {
  readonly ready: Promise<Watcher>
  readonly slots: Set<EtcdSlot>
  /** key → revision of its last change (delete or put) seen on the watch. */
  readonly changed: Map<string, Change>
  linger?: NodeJS.Timeout
}

interface LineRead {
  readonly line: LineEntry[]
  readonly leases: Map<string, string>
  readonly revision: bigint
}

const LOST: ExtendResult = { status: 'lost' }

/**
 * etcd v3. Every hold or waiter is one key `<name>/<lease id hex>.<hold id>`
 * attached to a lease of this client, ordered by create revision; the key with
 * the lowest create revision under `<name>/` holds a mutex, exactly as in
 * etcd's concurrency.Mutex (`etcdctl lock <name>`), so both exclude each other.
 * The create revision is the fencing token. A release deletes the key, which by
 * itself makes the next entry the holder; its client learns it from the watch.
 */
export class EtcdDriver implements Driver, SlotStore<EtcdSlot> {
  readonly store = 'etcd'
  readonly capabilities = CAPABILITIES
  private readonly leases = new Map<number, ClientLease>()
  private readonly slots = new Slots<EtcdSlot>(this)
  private readonly names = new Map<string, NameWatch>()
  /** Every watcher this client made, to detach them all on close (see close). */
  private readonly watchers = new Set<Watcher>()
  private closed = false

  constructor(
    private readonly client: Etcd3,
    private readonly target: EtcdTarget,
    private readonly clientId: string,
    private idleWatcher: Watcher,
    private readonly reconnects: WatchReconnects,
  ) {
    this.watchers.add(idleWatcher)
    this.keepIdle(idleWatcher)
  }

  /** etcd3's `create()`, keeping the watcher even while it is not yet connected. */
  private createWatch(builder: WatchBuilder): Promise<Watcher> {
    const watcher = builder.watcher()
    this.watchers.add(watcher)
    watcher.once('end', () => this.watchers.delete(watcher))
    return new Promise((resolve, reject) => {
      watcher.once('connected', () => resolve(watcher))
      watcher.once('error', reject)
    })
  }

  /**
   * etcd3 tears its watch stream down with the last watcher: the idle watcher
   * keeps it up. etcd cancels it too when it can not resume it (compacted),
   * so it is then made again.
   */
  private keepIdle(watcher: Watcher): void {
    watcher.on('disconnected', () => resumeFromNow(watcher))
    watcher.on('error', () => {
      const again = (): void => {
        if (this.closed) return
        this.createWatch(this.client.watch().key(idleKey(this.target))).then((fresh) => {
          if (this.closed) return void fresh.cancel().catch(() => {})
          this.idleWatcher = fresh
          this.keepIdle(fresh)
        }, () => setTimeout(again, 1000).unref())
      }
      again()
    })
  }

  async acquire(request: AcquireRequest): Promise<AcquireResult> {
    const known = this.slots.get(request.owner)
    if (known?.held) return this.slots.granted(known)
    if (known) return this.refreshWaiter(known, request)

    const watch = this.watchName(request.name)
    await this.guard(this.watchReady(request.name, watch))
    const lease = await this.leaseFor(request.ttlMs, request.lockDelayMs)
    // The key is found again by its name: never while this client is deleting it.
    if (!(await this.slots.settled(request.owner))) return STILL_REMOVING
    const key = `${this.linePrefix(request.name)}${lease.hex}.${request.owner.slice(this.clientId.length + 1)}`
    const candidate = request.value !== undefined
    // Who asked and when (by this client's clock: etcd keeps none), for inspect.
    // A candidate's key holds its bare value, as in etcd's own election layout
    // (see proclaim), escaped only when it would read as a baton entry.
    const value = candidate ? encodeCandidateValue(request.value) : `${encodeEntry(request)}\n${encodeNote({ description: request.description, since: Date.now() })}`
    if (candidate) this.candidates.set(key, request.owner)
    const range = this.lineRange(request.name)
    const reply = await this.guard(this.client.kv.txn({
      compare: [{ key: Buffer.from(key), target: 'Create', result: 'Equal', create_revision: 0 }],
      success: [{ request_put: { key: Buffer.from(key), value: Buffer.from(value), lease: lease.id } }, { request_range: range }],
      failure: [{ request_range: range }],
    }))
    const read = this.parseLine(request.name, reply.responses[reply.succeeded ? 1 : 0]!.response_range.kvs, BigInt(reply.header.revision))
    const mine = read.line.find((e) => e.id === key)
    // Dropped at once (forced), or already reported deleted by the watch after this read: try again.
    const deletedSince = watch.changed.get(key)
    if (!mine || (deletedSince?.deleted && deletedSince.revision > read.revision)) {
      this.candidates.delete(key)
      return { status: 'busy', retryAfterMs: 1 }
    }
    // A key found again (a retry after a lost reply) is this owner's entry only on the
    // lease it was put on: one moved to a lock delay's lease is an expired hold's phantom.
    if (!reply.succeeded && read.leases.get(key) !== lease.id) return { status: 'busy', retryAfterMs: Math.max(1, request.lockDelayMs) }

    const conflict = conflictIn(read.line, request)
    if (conflict) {
      this.candidates.delete(key)
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
      const lease = await this.leaseFor(ttlMs, hold.lockDelayMs)
      // A new ttl can need a lease of another length: the key moves to it and keeps its create revision.
      const moving = lease !== slot.lease
      const reply = await this.guard(this.client.kv.txn({
        compare: [this.sameEntry(slot)],
        // The value as etcd has it: a proclaim through another client may have changed it.
        success: moving ? [{ request_put: { key: Buffer.from(slot.id), ignore_value: true, lease: lease.id } }] : [],
      }))
      if (!reply.succeeded || this.slots.get(hold.owner) !== slot) {
        this.slots.forget(slot)
        return LOST
      }
      if (moving) {
        slot.lease.slots.delete(slot)
        slot.lease = lease
        lease.slots.add(slot)
      }
      slot.ttlMs = ttlMs
      this.slots.hold(slot)
      return { status: 'extended', ttlMs: this.ttlLeft(slot) }
    }))
  }

  async release(hold: HoldRef | (LockSpec & { readonly owner: string })): Promise<boolean> {
    const slot = this.slots.get(hold.owner)
    if (!slot || slot.name !== hold.name) {
      // An attempt whose reply was lost may still have made a key on a live
      // lease: its key is known for each lease (`<lease>.<owner>`, as a retry
      // finds it), and it is deleted again and again until etcd answers.
      if (!('token' in hold) && hold.owner.startsWith(`${this.clientId}.`)) {
        const tail = hold.owner.slice(this.clientId.length + 1)
        await this.slots.removeLeftovers(hold.owner, () =>
          this.deleteFound([...this.leases.values()].map((l) => `${this.linePrefix(hold.name)}${l.hex}.${tail}`)))
      }
      return false
    }
    this.slots.forget(slot)
    await this.slots.remove(slot.owner, () => this.drop(slot))
    return slot.held
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

  watch(_name: string, owner: string, onWake: (wake: Wake) => void): () => void {
    return this.slots.watch(owner, onWake)
  }

  /**
   * The key is still this hold's: the same create revision (its token), as
   * etcd's Election.Proclaim checks. Not its value: a proclaim (through this
   * client or another sharing the store, a lock server's peer) changes it,
   * and must never make the holder's renewal fail.
   */
  private sameEntry(slot: EtcdSlot) {
    return { key: Buffer.from(slot.id), target: 'Create' as const, result: 'Equal' as const, create_revision: String(slot.token) }
  }

  /** Keys of this client's election candidates → their owners: their values are bare, so parseLine knows them by key. */
  private readonly candidates = new Map<string, string>()

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
    const reply = await this.guard(this.client.kv.txn({
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
    const reply = await this.guard(this.client.kv.range(this.lineRange(hold.name)))
    const prefix = this.linePrefix(hold.name)
    const first = reply.kvs.find((kv) => !kv.key.toString().slice(prefix.length).includes('/'))
    const key = first?.key.toString()
    if (!first || !key || first.create_revision !== String(hold.token) || !key.endsWith(`.${hold.owner.slice(hold.owner.indexOf('.') + 1)}`)) return undefined
    const stored = first.value.toString()
    const foreign = '\u0000'
    return { key, stored, candidate: decodeEntry(key, 0n, stored, foreign).owner === foreign }
  }

  /** Election observers by name, with the prefix watch that tells them (`<name>/`, as the line's). */
  private readonly observed = new Map<string, { observers: Set<() => void>; ready: Promise<Watcher> }>()

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
      const ready = this.createWatch(this.client.watch().prefix(this.linePrefix(name)))
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

  async inspect(name: string): Promise<LockInfo | null> {
    const read = await this.readLineOf(name)
    if (read.line.length === 0) return null
    const blocking = holdersIn(read.line)
    const leaseIds = [...new Set(blocking.map((h) => read.leases.get(h.id)!))]
    const lives = new Map<string, LeaseLife>()
    await this.guard(Promise.all(leaseIds.map(async (id) => {
      const [reply, marker] = await Promise.all([
        this.client.leaseClient.leaseTimeToLive({ ID: id }),
        this.client.kv.range({ key: Buffer.from(delayMarkerKey(this.target, id)) }),
      ])
      lives.set(id, { granted: Number(reply.grantedTTL), left: Math.max(0, Number(reply.TTL)), delay: delayOfMarker(marker.kvs[0]?.value.toString()) })
    })))
    const wall = Date.now()
    // A lock-delay phantom blocks the name but holds nothing: no holder, as on every store (leader() is null).
    const holders = blocking.filter((entry) => this.slots.get(entry.owner)?.held || !isPhantom(lives.get(read.leases.get(entry.id)!)))
    const summaries: HolderSummary[] = holders.map((entry) => {
      const mine = this.slots.get(entry.owner)
      const life = lives.get(read.leases.get(entry.id)!)
      const left = mine?.held ? this.ttlLeft(mine) : ((life?.left ?? 0) - (life?.delay ?? 0)) * 1000
      return summaryOf(entry, wall + left)
    })
    const granted = [...new Set(holders.map((h) => lives.get(read.leases.get(h.id)!)?.granted ?? 0))].filter((s) => s > 0)
    const first = read.line[0]!
    return {
      name, kind: first.kind, fair: true, permits: first.permits, holders: summaries,
      waiters: waitersIn(read.line).map(waiterSummaryOf),
      lastToken: blocking.reduce((max, h) => (h.token > max ? h.token : max), 0n),
      note: `etcd lease of the holders: ${granted.map((s) => `${s} s`).join(', ') || 'unknown'} ` +
        '(asked: the ttl in whole seconds; etcd raises leases to its floor, 1.5 × its election timeout, 2 s by default): a live client ends each hold at its ttl; ' +
        'a crashed or cut-off client\'s holds end when that lease runs out',
    }
  }

  /**
   * One keys-only range read from the cursor on (a name after `after` has
   * its keys at or after `<keyPrefix><after>`), then only the page's names
   * inspected. Keys are `<name>/<id>`, so key order is not quite name order
   * (a name with a byte below "/" sorts its keys first): the range is not
   * cut at the page's size, and the names are sorted here.
   */
  async *list(prefix: string, page?: ListPage): AsyncIterable<LockInfo> {
    const base = this.target.keyPrefix + prefix
    const after = page?.after
    const start = after !== undefined && compareNames(after, prefix) > 0 ? this.target.keyPrefix + after : base
    const reply = await this.guard(this.client.kv.range({ key: Buffer.from(start), range_end: prefixEnd(base), keys_only: true }))
    const names = new Set<string>()
    for (const kv of reply.kvs) {
      const rest = kv.key.toString().slice(this.target.keyPrefix.length)
      const slash = rest.lastIndexOf('/')
      if (slash > 0 && /^[0-9a-f]+(\.[\w-]+)?$/.test(rest.slice(slash + 1))) names.add(rest.slice(0, slash))
    }
    yield* inspectInOrder(namesOfPage(names, prefix, page), limitOf(page), (name) => this.inspect(name))
  }

  async forceRelease(name: string): Promise<boolean> {
    const read = await this.readLineOf(name)
    if (read.line.length === 0) return false
    // All at one revision: nobody is granted by it; holders' clients see `lost`, waiters' `retry`.
    await this.deleteKeys(read.line.map((e) => e.id))
    return true
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.deleteKeys(this.slots.clear().map((s) => s.id)).catch(() => {})
    // Holds stay until their lease runs out, like any client that goes away.
    for (const lease of this.leases.values()) lease.stop()
    this.leases.clear()
    for (const watch of this.names.values()) void watch.ready.then((w) => w.cancel(), () => {})
    this.names.clear()
    for (const { ready } of this.observed.values()) void ready.then((w) => w.cancel(), () => {})
    this.observed.clear()
    // etcd3 waits for etcd to confirm a watch's cancel, which never comes over
    // a cut or stalled stream: closing the client ends the stream anyway.
    let timer: NodeJS.Timeout | undefined
    await Promise.race([
      this.idleWatcher.cancel().catch(() => {}),
      new Promise((resolve) => (timer = setTimeout(resolve, this.target.commandTimeoutMs))),
    ])
    clearTimeout(timer)
    this.reconnects.close()
    this.client.close()
    // etcd3 re-opens its watch stream, forever and on a timer, while any
    // watcher is attached, even to a closed client: one whose cancel etcd
    // never confirmed (a cut stream), or one not yet connected (whose
    // create() never resolved, so nobody could cancel it), kept the process
    // alive. Once the stream is down (it says so with 'disconnected'), a
    // cancel detaches at once; each is also tried now.
    for (const watcher of this.watchers) {
      watcher.removeAllListeners('disconnected')
      watcher.on('disconnected', () => detach(watcher))
      detach(watcher)
    }
    this.watchers.clear()
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
      compare: [this.sameEntry(slot)],
      success: [
        { request_put: { key: Buffer.from(slot.id), ignore_value: true, lease: ID } },
        { request_put: { key: Buffer.from(delayMarkerKey(this.target, ID)), value: Buffer.from(ALL_DELAY), lease: ID } },
      ],
    }))
  }

  async readLine(slot: EtcdSlot): Promise<{ line: LineEntry[]; marker: unknown }> {
    const read = await this.readLineOf(slot.name)
    return { line: read.line, marker: { line: read.line, revision: read.revision } satisfies LineMarker }
  }

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
    const changed = this.names.get(slot.name)?.changed
    const own = changed?.get(slot.id)
    if (own?.deleted && own.revision > revision) return this.slots.gone(slot, 'its key was deleted')
    let moved = false
    for (const id of [...slot.ahead.keys()]) {
      const change = changed?.get(id)
      if (change && change.revision > revision) moved = this.apply(slot, id, change) || moved
    }
    if (moved) this.settle(slot)
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
    this.slots.wake(slot.owner, { type: 'granted', token: slot.token, ttlMs: this.ttlLeft(slot) })
  }

  /** The hold's own ttl, but never past what the lease surely covers. */
  ttlLeft(slot: EtcdSlot): number {
    return Math.max(0, Math.floor(Math.min(slot.endsAt - monotonicNow(), slot.lease.remainingMs())))
  }

  forgotten(slot: EtcdSlot): void {
    if (slot.candidate) this.candidates.delete(slot.id)
    slot.lease.slots.delete(slot)
    const watch = this.names.get(slot.name)
    if (!watch) return
    watch.slots.delete(slot)
    if (watch.slots.size === 0) this.lingerThenUnwatch(slot.name, watch)
  }

  // ---- line reading ----

  private linePrefix(name: string): string {
    return `${this.target.keyPrefix}${name}/`
  }

  private lineRange(name: string): IRangeRequest {
    const prefix = this.linePrefix(name)
    return { key: Buffer.from(prefix), range_end: prefixEnd(prefix), sort_order: 'Ascend', sort_target: 'Create' }
  }

  private async readLineOf(name: string): Promise<LineRead> {
    const reply = await this.guard(this.client.kv.range(this.lineRange(name)))
    return this.parseLine(name, reply.kvs, BigInt(reply.header.revision))
  }

  /** Keys of deeper names (`<name>/sub/…`) share the range but not the line. */
  private parseLine(name: string, kvs: readonly { key: Buffer; value: Buffer; create_revision: string; lease: string }[], revision: bigint): LineRead {
    const prefix = this.linePrefix(name)
    const line: LineEntry[] = []
    const leases = new Map<string, string>()
    for (const kv of kvs) {
      const key = kv.key.toString()
      const rest = key.slice(prefix.length)
      if (rest.includes('/')) continue
      const raw = kv.value.toString()
      const candidate = this.candidates.get(key)
      const foreignOwner = `etcd-lease:${rest}`
      // A bare value: this client's candidate (known by its key), or etcd's
      // election layout / another program's lock, whose value is shown as is.
      const entry = candidate !== undefined
        ? { id: key, token: BigInt(kv.create_revision), owner: candidate, kind: 'mutex' as const, mode: 'exclusive' as const, permits: 1, weight: 1, fair: true, value: decodeCandidateValue(raw) }
        : decodeEntry(key, BigInt(kv.create_revision), raw, foreignOwner)
      line.push(entry.owner === foreignOwner ? { ...entry, value: decodeCandidateValue(raw) } : entry)
      leases.set(key, kv.lease)
    }
    return { line, leases, revision }
  }

  /** A repeated attempt of a waiter: keeps its place, and re-reads the line in case a wake-up was missed. */
  private async refreshWaiter(slot: EtcdSlot, request: AcquireRequest): Promise<AcquireResult> {
    this.slots.keepWaiting(slot, request.queueTtlMs)
    const read = await this.readLineOf(slot.name)
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

  private onChange(watch: NameWatch, key: string, change: Change): void {
    watch.changed.delete(key)
    watch.changed.set(key, change)
    if (watch.changed.size > CHANGES_KEPT) watch.changed.delete(watch.changed.keys().next().value!)
    for (const slot of watch.slots) {
      if (slot.id === key) {
        if (change.deleted) this.slots.gone(slot, 'the store dropped it (released by force, or this client\'s etcd lease ended)')
      } else if (!slot.held && slot.seenAt !== undefined && change.revision > slot.seenAt && this.apply(slot, key, change)) {
        this.settle(slot)
      }
    }
  }

  private adopt(slot: EtcdSlot, watch: NameWatch): void {
    this.slots.adopt(slot)
    slot.lease.slots.add(slot)
    watch.slots.add(slot)
    clearTimeout(watch.linger)
  }

  // ---- watches and leases ----

  private watchName(name: string): NameWatch {
    let watch = this.names.get(name)
    if (watch) return watch
    const changed = new Map<string, Change>()
    const ready = this.createWatch(this.client.watch().prefix(this.linePrefix(name)))
    const created: NameWatch = { ready, slots: new Set(), changed }
    watch = created
    ready.then((watcher) => {
      watcher.on('put', (kv) => this.onChange(created, kv.key.toString(), { revision: BigInt(kv.mod_revision), deleted: false, value: kv.value.toString() }))
      watcher.on('delete', (kv) => this.onChange(created, kv.key.toString(), { revision: BigInt(kv.mod_revision), deleted: true, value: '' }))
      let blipped = false
      watcher.on('disconnected', () => {
        blipped = true
        resumeFromNow(watcher)
      })
      // Back after a blip, from the current revision: what changed meanwhile is read, not replayed.
      watcher.on('connected', () => {
        if (!blipped) return
        blipped = false
        this.resync(name, created)
      })
      // Cancelled by etcd all the same (for any other reason): made again.
      watcher.on('error', () => this.rewatchName(name, created))
    }, () => {
      if (this.names.get(name) === created) this.names.delete(name)
    })
    this.names.set(name, watch)
    return watch
  }

  /** A watch etcd cancelled: made again from the current revision, then what it watched is read again. */
  private rewatchName(name: string, dead: NameWatch): void {
    if (this.closed || this.names.get(name) !== dead) return
    this.names.delete(name)
    void dead.ready.then((w) => w.cancel(), () => {}).catch(() => {})
    const fresh = this.watchName(name)
    for (const slot of dead.slots) fresh.slots.add(slot)
    dead.slots.clear()
    this.resync(name, fresh)
    if (fresh.slots.size === 0) this.lingerThenUnwatch(name, fresh)
  }

  /**
   * Reads the name's line again after its watch may have missed changes: a
   * holder whose key went meanwhile loses, a waiter is placed by the fresh
   * line (granted if due, else behind its blockers). Tried again until etcd
   * answers, while the watch is the name's.
   */
  private resync(name: string, watch: NameWatch): void {
    const once = async (): Promise<void> => {
      await this.watchReady(name, watch)
      const read = await this.readLineOf(name)
      const marker = { line: read.line, revision: read.revision } satisfies LineMarker
      for (const slot of [...watch.slots]) {
        if (this.slots.get(slot.owner) !== slot) continue
        if (!read.line.some((e) => e.id === slot.id)) {
          this.slots.gone(slot, 'the store dropped it (released by force, or this client\'s etcd lease ended)')
        } else if (!slot.held && this.slots.place(slot, read.line, marker) === 'granted') {
          this.slots.wake(slot.owner, { type: 'granted', token: slot.token, ttlMs: this.ttlLeft(slot) })
        }
      }
    }
    const attempt = (delayMs: number): void => {
      once().catch(() => {
        if (this.closed || this.names.get(name) !== watch) return
        setTimeout(() => attempt(Math.min(delayMs * 2, 5000)), delayMs).unref()
      })
    }
    attempt(250)
  }

  /**
   * The name's watch, within the command timeout: etcd3 re-opens a broken
   * watch stream with a backoff (WatchReconnects) and has no deadline for it.
   * A watch that comes late stays for the next attempt, or goes after the
   * usual linger when nobody uses it.
   */
  private watchReady(name: string, watch: NameWatch): Promise<Watcher> {
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        if (watch.slots.size === 0) this.lingerThenUnwatch(name, watch)
        reject(new Error(`the watch of "${name}" was not set up within ${this.target.commandTimeoutMs} ms`))
      }, this.target.commandTimeoutMs)
    })
    return Promise.race([watch.ready, late]).finally(() => clearTimeout(timer))
  }

  private lingerThenUnwatch(name: string, watch: NameWatch): void {
    if (this.closed) return
    clearTimeout(watch.linger)
    watch.linger = setTimeout(() => this.unwatchName(name, watch), NAME_WATCH_LINGER_MS)
    watch.linger.unref()
  }

  private unwatchName(name: string, watch: NameWatch): void {
    if (watch.slots.size > 0 || this.names.get(name) !== watch) return
    this.names.delete(name)
    void watch.ready.then((w) => w.cancel(), () => {})
  }

  /**
   * The lease for holds of `ttlMs`. With a lock delay, it is longer by the
   * delay: a crashed client's keys then outlive the end of its holds by it.
   */
  private async leaseFor(ttlMs: number, lockDelayMs = 0): Promise<ClientLease> {
    const delaySeconds = lockDelayMs > 0 ? lockDelaySeconds(lockDelayMs) : 0
    const seconds = leaseSecondsFor(ttlMs) + delaySeconds
    let lease = this.leases.get(seconds)
    if (!lease) {
      lease = new ClientLease(this.client.lease(seconds, { autoKeepAlive: false }), seconds, (l) => this.leaseLost(l), async (id) => {
        const live = await this.client.leaseClient.leaseTimeToLive({ ID: id })
        return Number(live.grantedTTL)
      }, this.target.commandTimeoutMs, delaySeconds, async (id) => {
        await this.client.kv.put({ key: Buffer.from(delayMarkerKey(this.target, id)), value: Buffer.from(String(delaySeconds)), lease: id })
      })
      this.leases.set(seconds, lease)
    }
    try {
      await lease.ready
    } catch (cause) {
      if (this.leases.get(seconds) === lease) this.leases.delete(seconds)
      // Granted, but its length could not be read: nobody keeps it alive, etcd ends it.
      lease.stop()
      throw await etcdDiagnosis(this.target, cause)
    }
    return lease
  }

  /** The lease ended (keep-alives failed past its ttl, or etcd revoked it): every key on it is gone. */
  private leaseLost(lease: ClientLease): void {
    if (this.leases.get(lease.seconds) === lease) this.leases.delete(lease.seconds)
    for (const slot of [...lease.slots]) this.slots.gone(slot, 'this client\'s etcd lease ended (keep-alives failed past its ttl)')
  }

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

  private async deleteKeys(keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return
    const success: IRequestOp[] = keys.map((key) => ({ request_delete_range: { key: Buffer.from(key) } }))
    await this.guard(this.client.kv.txn({ success }))
  }

  private async guard<T>(promise: Promise<T>): Promise<T> {
    try {
      return await promise
    } catch (cause) {
      throw await etcdDiagnosis(this.target, cause)
    }
  }
}

/**
 * The lease asked for a hold of `ttlMs`: the ttl rounded up to whole seconds,
 * so that a crashed client's holds end within their ttl (docs/election.md).
 * Keep-alives go every third of it; the client counts a hold only as far as
 * the last acknowledged keep-alive covers it (ttlLeft). etcd may grant more
 * (its floor); the grant is read back, shown by inspect(), and used for the
 * ttl reported to the core.
 */
export function leaseSecondsFor(ttlMs: number): number {
  return Math.max(ETCD_MIN_LEASE_SECONDS, Math.ceil(ttlMs / 1000))
}

/**
 * etcd3 re-creates a watch after a reconnect from the revision after the last
 * one it saw. When that revision was compacted meanwhile, etcd cancels the
 * watch, and etcd3 then stalls every watch queued behind it on the stream
 * (it waits for a creation answer that never comes): no event reaches this
 * client any more. So a broken watch resumes from the current revision
 * instead, and its owner reads what it watched again (resync).
 */
/** Cancels a watcher of a closed client, whatever state its stream is in. */
function detach(watcher: Watcher): void {
  try {
    watcher.cancel().catch(() => {})
  } catch {
    // The stream is already gone: the 'disconnected' that follows detaches it.
  }
}

function resumeFromNow(watcher: Watcher): void {
  delete (watcher.request as { start_revision?: unknown }).start_revision
}

/** A key nobody writes, watched to keep etcd3's watch stream open. */
function idleKey(target: EtcdTarget): string {
  return `${target.keyPrefix}\u0000baton/idle`
}

/**
 * The key that marks lease `id` (decimal) as one with a lock delay: its value
 * is the delay in seconds, the last part of the lease (or ALL_DELAY). It rides on the lease
 * itself, so it lives exactly as long. A key on such a lease is a phantom once
 * the lease is within its delay of its end (see isPhantom). Outside every
 * name's line (no name starts with a NUL), and never read as one by list().
 */
function delayMarkerKey(target: EtcdTarget, id: string): string {
  return `${target.keyPrefix}\u0000baton/lock-delay.${BigInt(id).toString(16)}`
}

/** The marker of a lease that is all lock delay (an expired hold's key moved to it): however long etcd made it. */
const ALL_DELAY = 'all'

function delayOfMarker(stored: string | undefined): number {
  if (stored === ALL_DELAY) return Infinity
  const seconds = Number(stored ?? 0)
  return Number.isInteger(seconds) && seconds > 0 ? seconds : 0
}

/** A lease as inspect() reads it: seconds granted and left (etcd rounds down), and its lock delay (0 for none). */
interface LeaseLife {
  readonly granted: number
  readonly left: number
  readonly delay: number
}

/**
 * A key on this lease is an expired hold's phantom: the lease is within its
 * lock delay of its end. A live client renews it every third of its holds'
 * part, so that happens only when its holds have run out unrenewed (a
 * crashed or cut-off client), or when the key was moved to a lease that is
 * all delay (keepForLockDelay).
 */
function isPhantom(life: LeaseLife | undefined): boolean {
  return life !== undefined && life.delay > 0 && life.left < life.delay
}

/** etcd leases count whole seconds (and etcd may raise them to its floor): a delay is never cut short. */
function lockDelaySeconds(lockDelayMs: number): number {
  return Math.max(1, Math.ceil(lockDelayMs / 1000))
}

/** The end of etcd's range for every key starting with `prefix`. */
function prefixEnd(prefix: string): Buffer {
  const end = Buffer.from(prefix)
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i] = end[i]! + 1
      return end.subarray(0, i + 1)
    }
  }
  return Buffer.from([0])
}

export const createEtcdDriver: DriverFactory = async (url: StoreUrl, options: DriverOptions) => {
  const target = etcdTarget(url, options)
  const reconnects = new WatchReconnects()
  const client = await openEtcd(target, options.connectTimeoutMs, reconnects)
  try {
    // etcd3 tears its watch stream down with the last watcher: this one keeps it up.
    const idle = await client.watch().key(idleKey(target)).create()
    return new EtcdDriver(client, target, options.clientId, idle, reconnects)
  } catch (cause) {
    reconnects.close()
    client.close()
    throw await etcdDiagnosis(target, cause)
  }
}

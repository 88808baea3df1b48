import type { Event, Stat } from 'node-zookeeper-client'
import type { AcquireRequest, AcquireResult, ExtendResult, HoldRef, AttemptSpec } from '../../core/driver.js'
import { monotonicNow } from '../../core/clock.js'
import { weightOf } from '../../core/compat.js'
import { conflictIn, encodeEntry, encodeNote, type LineEntry } from '../sequenced/line.js'
import { busyIn, newSlot, Slots, STILL_REMOVING, type SlotStore } from '../sequenced/slots.js'
import { Parents } from './parents.js'
import { ALIVE_ROOT, aliveMarkerOf, parentOf, SEQUENCE, tokenOf, type ZkLines } from './paths.js'
import { CreateMode, errorCode, Exception, sessionInterrupted, zkDiagnosis, type ZkSession, type ZkTarget } from './session.js'
import { guarded, removeNode, type SessionEvents, type ZkSessions } from './sessions.js'
import type { ZkSlot } from './slot.js'

const [NODE_DELETED, NODE_DATA_CHANGED] = [2, 3] // ZooKeeper's watcher event types

/**
 * This client's holds and waiters: one EPHEMERAL_SEQUENTIAL node each, on a
 * session of this client (ZkSessions), in its name's line (ZkLines), under a
 * parent made and removed as needed (Parents); a waiter sets exists-watches
 * on its blockers only. Acquire, extend, release and downgrade, what the
 * shared slot bookkeeping asks of ZooKeeper (SlotStore), and what becomes of
 * a session's entries.
 */
export class ZkHolds implements SlotStore<ZkSlot>, SessionEvents {
  readonly slots = new Slots<ZkSlot>(this)
  private readonly parents: Parents
  /** Removals of expired holds' nodes at the end of their lock delay, with the node each removes. */
  private readonly delays = new Map<NodeJS.Timeout, ZkSlot>()

  constructor(
    private readonly target: ZkTarget,
    private readonly clientId: string,
    private readonly sessions: ZkSessions,
    private readonly lines: ZkLines,
  ) {
    this.parents = new Parents(target)
  }

  async acquire(request: AcquireRequest): Promise<AcquireResult> {
    const known = this.slots.get(request.owner)
    if (known?.held) return this.slots.granted(known)
    if (known) return this.refreshWaiter(known, request)
    const session = await this.sessions.for(request.ttlMs, request.lockDelayMs)
    if (session.timeoutMs < request.ttlMs) {
      return {
        status: 'conflict',
        detail: `a ttl of ${request.ttlMs} ms is longer than the longest session the ZooKeeper ensemble grants ` +
          `(${session.timeoutMs} ms, its maxSessionTimeout, 20 × tickTime by default); use a shorter ttl with autoExtend, or raise maxSessionTimeout`,
      }
    }
    const parent = parentOf(request.name)
    // A node outlives its hold by the lock delay: a marker on a session of the ttl alone says the hold is live.
    const alive = request.lockDelayMs > 0 ? await this.markAlive(request.ttlMs, aliveMarkerOf(request.name, request.owner)) : undefined
    // Who asked, in the node's data; when is the node's creation time (ctime, the ensemble's clock).
    const note = encodeNote({ description: request.description, value: request.value, alive: alive?.path })
    // A retry finds its node by its owner: never one this client is still removing.
    if (request.retry && !(await this.slots.settled(request.owner))) return STILL_REMOVING
    let entry: { path: string; children: string[]; parentStat: Stat }
    try {
      const found = request.retry ? await this.findOwn(session, parent, request.owner) : undefined
      entry = found ? { path: found, ...await this.readParent(session, parent) } : await this.createEntry(session, parent, `${encodeEntry(request)}-`, note)
    } catch (error) {
      // A waiter's retry caught by its session's connection dropping (a paused process resumed as its
      // session ends): ask again soon, on the session as it is then, as Curator retries on CONNECTION_LOSS
      // (its node, if made, is found by its owner). A first attempt, or a silent ensemble, fails as before.
      if (request.retry && sessionInterrupted(error)) return { status: 'busy', retryAfterMs: 100 }
      throw error
    }
    const { path, children, parentStat } = entry
    const own = path.slice(parent.length + 1)
    if (!children.includes(own)) return { status: 'busy', retryAfterMs: 1 } // removed at once (forced): try again
    const line = this.lines.parse(parent, children)
    const conflict = conflictIn(line, request)
    if (conflict) {
      await this.slots.remove(request.owner, () => removeNode(this.target, session, path))
      return { status: 'conflict', detail: conflict }
    }
    const slot = newSlot<ZkSlot>({
      owner: request.owner, name: request.name, id: path, kind: request.kind, mode: request.mode,
      permits: request.permits, weight: weightOf(request), lockDelayMs: request.lockDelayMs, token: tokenOf(parentStat, own), ttlMs: request.ttlMs, session, note,
      ...(alive ? { alive } : {}),
    })
    this.adopt(slot)
    this.watchOwn(slot)
    const placed = this.slots.place(slot, line, undefined)
    if (placed === 'granted') return this.slots.granted(slot)
    if (!request.enqueue || placed === undefined) {
      this.slots.forget(slot)
      await this.slots.remove(slot.owner, () => this.drop(slot))
    } else {
      this.slots.keepWaiting(slot, request.queueTtlMs)
    }
    return busyIn(line, request.queueTtlMs)
  }

  async extend(holds: readonly HoldRef[], ttlMs: number): Promise<ExtendResult[]> {
    return Promise.all(holds.map(async (hold): Promise<ExtendResult> => {
      const slot = this.slots.get(hold.owner)
      if (!slot || !slot.held || slot.name !== hold.name || slot.token !== hold.token) return { status: 'lost' }
      // The node is ephemeral: it lives while its session does; this check,
      // answered by the leader (never from a follower's stale copy), proves both.
      const present = await this.guard(slot.session.existsAtLeader(slot.id))
      if (!present || this.slots.get(hold.owner) !== slot) {
        this.slots.forget(slot)
        return { status: 'lost' }
      }
      slot.ttlMs = ttlMs
      this.slots.hold(slot)
      return { status: 'extended', ttlMs: this.ttlLeft(slot) }
    }))
  }

  async release(hold: HoldRef | AttemptSpec): Promise<boolean> {
    // A failed attempt may still have made a node on a live session (its reply lost, or its create sent late: the
    // library keeps a request made while its session reconnects): find it by its owner (in its name, as Curator's
    // protected mode does), after that create, and remove it, again and again until the ensemble answers.
    return this.slots.release(hold, this.clientId, () => this.removeOwn(hold))
  }

  async downgrade(hold: HoldRef): Promise<boolean> {
    const slot = this.slots.get(hold.owner)
    if (!slot || !slot.held || slot.mode !== 'write' || slot.token !== hold.token) return false
    // The mode is in the node's name, which can not change: a data version above 0 says
    // "now a reader", and readers watching this node are woken by the data change.
    try {
      await slot.session.setData(slot.id, Buffer.from(slot.note))
    } catch (error) {
      if (errorCode(error) === Exception.NO_NODE) {
        this.slots.forget(slot)
        return false
      }
      throw await zkDiagnosis(this.target, error)
    }
    this.lines.downgraded.add(slot.id)
    slot.mode = 'read'
    return true
  }

  /**
   * A repeated attempt of a waiter: keeps its place and reads the line again,
   * which grants it if it is due and sets the watches on its blockers anew.
   * The watch that should have woken it may have fired while a re-read failed.
   */
  private async refreshWaiter(slot: ZkSlot, request: AcquireRequest): Promise<AcquireResult> {
    this.slots.keepWaiting(slot, request.queueTtlMs)
    let line: LineEntry[]
    try {
      line = (await this.readLine(slot)).line
    } catch {
      // Not now: the place stays, and the next refresh reads again.
      return { status: 'busy', retryAfterMs: Math.max(1, request.queueTtlMs) }
    }
    if (this.slots.get(slot.owner) !== slot) return this.acquire(request)
    if (slot.held) return this.slots.granted(slot)
    const placed = this.slots.place(slot, line, undefined)
    if (placed === 'granted') return this.slots.granted(slot)
    if (placed === undefined) {
      // Its node is gone (forced release, ended session): join the line again.
      this.slots.forget(slot)
      return this.acquire({ ...request, retry: true })
    }
    return busyIn(line, request.queueTtlMs)
  }

  /**
   * Makes the alive marker of a hold with a lock delay, on the session of its
   * ttl alone: a crashed client's marker goes with that session, at the end
   * of its holds, while its entries stay on their longer session for the
   * delay (sessionFor). Made again by a retry of the same owner.
   */
  private async markAlive(ttlMs: number, path: string): Promise<{ path: string; session: ZkSession }> {
    const session = await this.sessions.for(ttlMs)
    for (let attempt = 0; ; attempt++) {
      try {
        await session.create(path, undefined, CreateMode.EPHEMERAL)
        return { path, session }
      } catch (error) {
        const code = errorCode(error)
        if (code === Exception.NODE_EXISTS) return { path, session }
        if (code !== Exception.NO_NODE || attempt > 2) throw await zkDiagnosis(this.target, error)
      }
      await session.mkdirp(ALIVE_ROOT).catch(() => {})
    }
  }

  /**
   * Creates the entry and reads the line in one round trip: ZooKeeper runs a
   * session's requests in the order sent, so the read, sent right behind the
   * create, sees the new node.
   */
  private async createEntry(session: ZkSession, parent: string, prefix: string, note: string): Promise<{ path: string; children: string[]; parentStat: Stat }> {
    for (let attempt = 0; ; attempt++) {
      const created = session.create(`${parent}/${prefix}`, Buffer.from(note), CreateMode.EPHEMERAL_SEQUENTIAL)
      const read = session.childrenWithStat(parent)
      try {
        const path = await created
        const { children, stat } = await read
        return { path, children, parentStat: stat }
      } catch (error) {
        read.catch(() => {})
        if (errorCode(error) !== Exception.NO_NODE || attempt > 2) throw await zkDiagnosis(this.target, error)
      }
      await this.parents.create(session, parent)
    }
  }

  private readParent(session: ZkSession, parent: string): Promise<{ children: string[]; parentStat: Stat }> {
    return this.guard(session.childrenWithStat(parent)).then(({ children, stat }) => ({ children, parentStat: stat }))
  }

  /** Arms the watch that tells a holder of a forced release; sent after the grant, not waited for. */
  private watchOwn(slot: ZkSlot): void {
    slot.session.exists(slot.id, slot.onOwnChange ??= this.ownWatch(slot.owner, slot.id)).then((stat) => {
      if (!stat && this.slots.get(slot.owner) === slot) this.slots.gone(slot, 'the store dropped it (released by force)')
    }, () => {
      // No answer: the session's heartbeat and doubt timer take over.
    })
  }

  /** Our own node's deletion (forceRelease, session end) reaches its owner; a data change (downgrade) re-arms. */
  private ownWatch(owner: string, path: string): (event: Event) => void {
    const onEvent = (event: Event): void => {
      const slot = this.slots.get(owner)
      if (!slot || slot.id !== path) return
      if (event.getType() === NODE_DELETED) {
        this.slots.gone(slot, 'the store dropped it (released by force, or this client\'s ZooKeeper session ended)')
      } else {
        slot.session.exists(path, onEvent).then((stat) => {
          if (!stat) this.slots.gone(slot, 'the store dropped it (released by force)')
        }, () => {})
      }
    }
    return onEvent
  }

  /** This owner's node under `parent`, if an attempt made one; fails when the ensemble does not answer. */
  private async findOwn(session: ZkSession, parent: string, owner: string): Promise<string | undefined> {
    const children = await this.guard(session.children(parent)
      .catch((e: unknown) => (errorCode(e) === Exception.NO_NODE ? [] as string[] : Promise.reject(e))))
    const mine = children.find((c) => SEQUENCE.test(c) && c.slice(0, -11).endsWith(`|${owner}`))
    return mine && `${parent}/${mine}`
  }

  /** A node of a failed attempt's owner (see release): looked for on the session the attempt was sent on, whose requests run in order. */
  private async removeOwn(attempt: AttemptSpec): Promise<void> {
    const session = attempt.ttlMs === undefined ? await this.sessions.admin() : await this.sessions.for(attempt.ttlMs, attempt.lockDelayMs)
    const path = await this.findOwn(session, parentOf(attempt.name), attempt.owner)
    if (path) await removeNode(this.target, session, path)
  }

  private adopt(slot: ZkSlot): void {
    this.slots.adopt(slot)
    this.parents.entered(slot.name)
  }

  // ---- SlotStore ----

  async drop(slot: ZkSlot): Promise<void> {
    // An ended session took its ephemeral nodes with it.
    if (slot.session.expired) return
    await removeNode(this.target, slot.session, slot.id)
  }

  /** The node stays in its place for the delay, then goes; should this client die first, its session (ttl + delay) ends no sooner. */
  async keepForLockDelay(slot: ZkSlot): Promise<void> {
    const timer = setTimeout(() => {
      this.delays.delete(timer)
      this.slots.deleteEntry(slot)
    }, slot.lockDelayMs)
    timer.unref()
    this.delays.set(timer, slot)
  }

  async readLine(slot: ZkSlot): Promise<{ line: LineEntry[]; marker: unknown }> {
    const parent = parentOf(slot.name)
    const children = await this.guard(slot.session.children(parent))
    return { line: this.lines.parse(parent, children), marker: undefined }
  }

  /** One exists-watch per blocker; a blocker already gone (or downgraded) means read the line again now. */
  standBehind(slot: ZkSlot, blockers: readonly LineEntry[]): void {
    const onChange = slot.onBlockerChange ??= (event: Event): void => {
      if (event.getType() === NODE_DATA_CHANGED) this.lines.downgraded.add(event.getPath())
      void this.slots.recheck(slot)
    }
    void Promise.all(blockers.map((b) => slot.session.existsShared(b.id, onChange))).then(
      (stats) => {
        let stale = false
        stats.forEach((stat, i) => {
          if (!stat) stale = true
          else if (stat.version > 0 && !this.lines.downgraded.has(blockers[i]!.id)) {
            this.lines.downgraded.add(blockers[i]!.id)
            stale = true
          }
        })
        if (stale) void this.slots.recheck(slot)
      },
      () => setTimeout(() => void this.slots.recheck(slot), 100).unref(),
    )
  }

  /**
   * The hold's own ttl, never past what the session surely covers (its last
   * answered request + its timeout): a grant by a watch, the last heartbeat a
   * while ago, is counted short. A hold extended beyond its session's length
   * (a node can not move sessions) keeps its own ttl.
   */
  ttlLeft(slot: ZkSlot): number {
    const own = slot.endsAt - monotonicNow()
    const covered = slot.ttlMs <= slot.session.timeoutMs ? Math.min(own, slot.session.remainingMs()) : own
    // Other clients count a hold with a lock delay live only while its alive marker's session lasts.
    const marked = slot.alive && slot.ttlMs <= slot.alive.session.timeoutMs ? Math.min(covered, slot.alive.session.remainingMs()) : covered
    return Math.max(0, Math.floor(marked))
  }

  forgotten(slot: ZkSlot): void {
    this.lines.downgraded.delete(slot.id)
    // Sent on the session that made it, so a later marker of the same owner made there is never removed by this.
    if (slot.alive) slot.alive.session.remove(slot.alive.path).catch(() => {})
    this.parents.left(slot.name, slot.session)
  }

  // ---- SessionEvents ----

  /** Every node of the session is gone: holders lose, waiters try again (on a new session). */
  expired(session: ZkSession): void {
    for (const slot of [...this.slots.byOwner.values()]) {
      if (slot.session === session) this.slots.gone(slot, 'its ZooKeeper session expired')
      // Its alive marker went: every other client counts the hold ended.
      else if (slot.alive?.session === session) this.slots.gone(slot, 'the ZooKeeper session of its alive marker expired')
    }
  }

  /**
   * The session is back on a new connection: a deletion notice sent while it
   * was cut may be lost, so each holder's node is looked at again (and its
   * watch set anew) and each waiter reads its line again.
   */
  reconnected(session: ZkSession): void {
    for (const slot of [...this.slots.byOwner.values()]) {
      if (slot.session !== session) continue
      if (slot.held) this.watchOwn(slot)
      else void this.slots.recheck(slot)
    }
  }

  /**
   * Nothing heard for a whole session timeout: the ensemble may have expired
   * the session and granted our places to others. Holders lose now, waiters
   * try again; our nodes are removed if the session turns out to live on.
   */
  inDoubt(session: ZkSession): void {
    for (const slot of [...this.slots.byOwner.values()]) {
      if (slot.session !== session) continue
      this.slots.gone(slot, 'no answer from ZooKeeper for a whole session timeout (the session may have expired)')
      this.slots.deleteEntry(slot)
    }
  }

  /**
   * On close: holders are told now (closing a session deletes its nodes at
   * once), and this client's nodes and the parents of its names are tidied up.
   */
  async close(): Promise<void> {
    for (const slot of this.slots.byOwner.values()) {
      if (slot.held) this.slots.wake(slot.owner, { type: 'lost', reason: 'its client was closed, which ends its ZooKeeper session and every node of it' })
    }
    const used = this.parents.close()
    const entries = [...this.slots.byOwner.values()]
    this.slots.clear()
    // A closed client's delays end with it, as its sessions do.
    const phantoms = [...this.delays.values()]
    for (const timer of this.delays.keys()) clearTimeout(timer)
    this.delays.clear()
    const names = new Set([...used, ...entries.map((e) => e.name), ...phantoms.map((p) => p.name)])
    await this.tidyUp([...entries, ...phantoms], [...names])
  }

  /**
   * On close: this client's nodes go now, then the parents of the names it
   * used, each only if empty (ZooKeeper refuses a node with children), so a
   * clean close leaves no empty parent. Bounded by the command timeout: a
   * parent left by a silent ensemble goes with the next client to empty it.
   */
  private async tidyUp(nodes: readonly ZkSlot[], names: readonly string[]): Promise<void> {
    const work = (async () => {
      await Promise.all(nodes.map((n) => removeNode(this.target, n.session, n.id).catch(() => {})))
      const session = nodes[0]?.session ?? await this.sessions.any()
      if (!session || session.expired) return
      await Promise.all(names.map((name) => session.remove(parentOf(name)).catch(() => {})))
    })()
    let timer: NodeJS.Timeout | undefined
    await Promise.race([work, new Promise((resolve) => (timer = setTimeout(resolve, this.target.commandTimeoutMs)))])
    clearTimeout(timer)
  }

  private guard<T>(promise: Promise<T>): Promise<T> {
    return guarded(this.target, promise)
  }
}

import type { Event, Stat } from 'node-zookeeper-client'
import type {
  AcquireRequest, AcquireResult, Capabilities, Driver, DriverFactory, DriverOptions, ExtendResult, HoldRef,
  HolderSummary, ListPage, LockInfo, LockSpec, Wake,
} from '../../core/driver.js'
import { inspectInOrder, limitOf, namesOfPage } from '../../core/list.js'
import { monotonicNow } from '../../core/clock.js'
import { clientClosed } from '../../core/errors.js'
import { weightOf } from '../../core/compat.js'
import type { StoreUrl } from '../../core/url.js'
import { conflictIn, decodeEntry, decodeNote, encodeEntry, encodeNote, holdersIn, summaryOf, waiterSummaryOf, waitersIn, type LineEntry } from '../sequenced/line.js'
import { busyIn, newSlot, Slots, STILL_REMOVING, type Slot, type SlotStore } from '../sequenced/slots.js'
import { CreateMode, ensureChroot, errorCode, Exception, ZkSession, zkDiagnosis, zkTarget, type ZkTarget } from './session.js'

const CAPABILITIES: Capabilities = {
  // Lock delay: an expired hold's node stays for the delay; a crashed client's session outlives its holds by it.
  fair: true, rwlock: true, semaphore: true, lockDelay: true, handoff: true, durableTokens: true,
}

/** Every lock's parent node lives under this node (below the URL's chroot). */
const ROOT = '/baton'
/** The alive markers of holds with a lock delay (see aliveMarkerOf). */
const ALIVE_ROOT = '/baton-alive'
/** An empty parent is removed this long after this client's last entry under it left. */
const PARENT_LINGER_MS = 10_000
/** The session behind admin calls (inspect, list, forceRelease). */
const ADMIN_SESSION_MS = 10_000
/** ZooKeeper's sequence suffix: 10 digits. */
const SEQUENCE = /-(\d{10})$/
const NODE_DELETED = 2
const NODE_DATA_CHANGED = 3

interface ZkSlot extends Slot {
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

/** An observed election name: its observers, the one watcher function of its watches, the session they are on. */
interface Observed {
  readonly observers: Set<() => void>
  readonly onEvent: (event: Event) => void
  session?: ZkSession
  /** The paths its watches are set on now (the name's node, its first entry), forgotten when nobody observes. */
  readonly paths: Set<string>
}

/**
 * ZooKeeper. Every hold or waiter is one EPHEMERAL_SEQUENTIAL node
 * `/baton/<name, escaped>/<spec>|<owner>-<sequence>` of one of this client's
 * sessions; the line is ordered by the sequence suffix and each waiter sets an
 * exists-watch on the nodes it waits for only (see sequenced/line.ts), so a
 * release wakes one client, whatever the length of the line. The node's
 * creation zxid is the fencing token (sequence numbers restart when the parent
 * is removed; zxids never go back).
 */
export class ZkDriver implements Driver, SlotStore<ZkSlot> {
  readonly store = 'zookeeper'
  readonly capabilities = CAPABILITIES
  private readonly sessions = new Map<number, Promise<ZkSession>>()
  private readonly slots = new Slots<ZkSlot>(this)
  /** Entries of this client per name, for removing parents that fall empty. */
  private readonly parents = new Map<string, { count: number; linger?: NodeJS.Timeout }>()
  /** Write nodes seen downgraded (their data was set again: version > 0): they block writers only. */
  private readonly downgraded = new Set<string>()
  /** Removals of expired holds' nodes at the end of their lock delay, with the node each removes. */
  private readonly delays = new Map<NodeJS.Timeout, ZkSlot>()
  private closed = false

  constructor(private readonly target: ZkTarget, private readonly clientId: string) {}

  async acquire(request: AcquireRequest): Promise<AcquireResult> {
    const known = this.slots.get(request.owner)
    if (known?.held) return this.slots.granted(known)
    if (known) return this.refreshWaiter(known, request)
    const session = await this.sessionFor(request.ttlMs, request.lockDelayMs)
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
    const found = request.retry ? await this.findOwn(session, parent, request.owner) : undefined
    const { path, children, parentStat } = found
      ? { path: found, ...await this.readParent(session, parent) }
      : await this.createEntry(session, parent, `${encodeEntry(request)}-`, note)
    const own = path.slice(parent.length + 1)
    if (!children.includes(own)) return { status: 'busy', retryAfterMs: 1 } // removed at once (forced): try again
    const line = this.parseLine(parent, children)
    const conflict = conflictIn(line, request)
    if (conflict) {
      await this.slots.remove(request.owner, () => this.removeNode(session, path))
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

  async release(hold: HoldRef | (LockSpec & { readonly owner: string })): Promise<boolean> {
    const slot = this.slots.get(hold.owner)
    if (!slot || slot.name !== hold.name) {
      // An attempt whose reply was lost may still have made a node on a live
      // session: find it by its owner (in its name, as Curator's protected
      // mode does) and remove it, again and again until the ensemble answers.
      if (!('token' in hold) && hold.owner.startsWith(`${this.clientId}.`)) {
        await this.slots.removeLeftovers(hold.owner, () => this.removeOwn(parentOf(hold.name), hold.owner))
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
    this.downgraded.add(slot.id)
    slot.mode = 'read'
    return true
  }

  watch(_name: string, owner: string, onWake: (wake: Wake) => void): () => void {
    return this.slots.watch(owner, onWake)
  }

  /**
   * The node's data carries the value (encodeNote's "v"): set again in
   * place. Its data version goes above 0, which marks a *write* node
   * downgraded; a leader's node is exclusive, which that never changes. A
   * hold this client does not know (granted through another client: a lock
   * server's peer on the same store) is found by its owner, in its node's
   * name, and its token.
   */
  async proclaim(hold: HoldRef, value: string): Promise<boolean> {
    if (hold.mode !== 'exclusive') return false
    const slot = this.slots.get(hold.owner)
    if (!slot) return this.proclaimOthers(hold, value)
    if (!slot.held || slot.token !== hold.token || slot.name !== hold.name || slot.mode !== 'exclusive') return false
    const note = encodeNote({ ...decodeNote(slot.note), value })
    try {
      await slot.session.setData(slot.id, Buffer.from(note))
    } catch (error) {
      if (errorCode(error) === Exception.NO_NODE) {
        this.slots.forget(slot)
        return false
      }
      throw await zkDiagnosis(this.target, error)
    }
    slot.note = note
    return true
  }

  /** proclaim() for another client's hold: its node must lead the line with the token; its data is set only as read. */
  private async proclaimOthers(hold: HoldRef, value: string): Promise<boolean> {
    const session = await this.sessionFor(ADMIN_SESSION_MS)
    const parent = parentOf(hold.name)
    const read = await this.guard(session.childrenWithStat(parent)
      .catch((e: unknown) => (errorCode(e) === Exception.NO_NODE ? undefined : Promise.reject(e))))
    const head = read && this.parseLine(parent, read.children)[0]
    if (!read || !head || head.owner !== hold.owner || tokenOf(read.stat, head.id.slice(parent.length + 1)) !== hold.token) return false
    const node = await this.guard(session.getData(head.id))
    if (!node) return false
    const note = encodeNote({ ...decodeNote(node.data.toString()), value })
    try {
      await session.setData(head.id, Buffer.from(note), node.stat.version)
    } catch (error) {
      const code = errorCode(error)
      if (code === Exception.NO_NODE) return false
      // Changed since it was read (another proclaim): the newest value wins, so read it again.
      if (code === Exception.BAD_VERSION) return this.proclaimOthers(hold, value)
      throw await zkDiagnosis(this.target, error)
    }
    return true
  }

  /** Election observers by name: a children watch on the name's node and a data watch on its first entry. */
  private readonly observed = new Map<string, Observed>()

  observe(name: string, onChange: () => void): () => void {
    let entry = this.observed.get(name)
    if (!entry) {
      const observers = new Set<() => void>()
      const made = {
        observers,
        // One function per name: the client library keeps a watcher once per path, so arming again adds none.
        // The observers are told once the watches are set again, so a change right after their read is not missed.
        onEvent: () => this.armObserver(name, made),
        paths: new Set<string>(),
      } as Observed
      entry = made
      this.observed.set(name, made)
      this.armObserver(name, made)
    }
    const mine = () => onChange()
    const kept = entry
    kept.observers.add(mine)
    return () => {
      kept.observers.delete(mine)
      if (kept.observers.size > 0 || this.observed.get(name) !== kept) return
      this.observed.delete(name)
      // ZooKeeper watches can not be removed: this side forgets them (the server's fire once more, to nobody).
      // (A watch still being set is forgotten by armObserver once set.)
      for (const path of kept.paths) kept.session?.forgetWatch(path, kept.onEvent)
    }
  }

  /**
   * (Re)sets the one-shot watches of an observed name: its children (a
   * candidate joins, a leader resigns, a session ends) and the first
   * entry's data (a proclaim). A name with no node yet is watched for its
   * creation. Set again after every event; a failure tries again shortly
   * (on a fresh session if the old one expired) and counts as a notice.
   */
  private armObserver(name: string, entry: Observed): void {
    if (this.closed || this.observed.get(name) !== entry) return
    const parent = parentOf(name)
    const arm = async (): Promise<void> => {
      const session = await this.sessionFor(ADMIN_SESSION_MS)
      if (this.closed || this.observed.get(name) !== entry) return
      if (entry.session && entry.session !== session) for (const path of entry.paths) entry.session.forgetWatch(path, entry.onEvent)
      entry.session = session
      entry.paths.clear()
      entry.paths.add(parent)
      const children = await session.childrenWatched(parent, entry.onEvent).catch(async (error: unknown) => {
        if (errorCode(error) !== Exception.NO_NODE) throw error
        return (await session.exists(parent, entry.onEvent)) ? undefined : []
      })
      if (children === undefined) return arm() // made meanwhile
      const head = this.parseLine(parent, children)[0]
      if (head) entry.paths.add(head.id)
      if (head && !(await session.exists(head.id, entry.onEvent))) return arm() // gone meanwhile
      // Nobody observes any more: what was just set is forgotten on this side.
      if (!this.closed && this.observed.get(name) !== entry) for (const path of entry.paths) session.forgetWatch(path, entry.onEvent)
      if (this.closed || this.observed.get(name) !== entry) return
      // Watching now: what changed before the watches were set is read now.
      for (const each of entry.observers) each()
    }
    arm().catch(() => {
      const again = setTimeout(() => {
        for (const each of entry.observers) each()
        this.armObserver(name, entry)
      }, 500)
      again.unref()
    })
  }

  async inspect(name: string): Promise<LockInfo | null> {
    const session = await this.sessionFor(ADMIN_SESSION_MS)
    const parent = parentOf(name)
    const { children, stat: parentStat } = await this.guard(session.childrenWithStat(parent)
      .catch((e: unknown) => (errorCode(e) === Exception.NO_NODE ? { children: [] as string[], stat: undefined } : Promise.reject(e))))
    const nodes = new Map<string, { data: Buffer; stat: Stat }>()
    await this.guard(Promise.all(children.map(async (child) => {
      const node = await session.getData(`${parent}/${child}`)
      if (node) nodes.set(`${parent}/${child}`, node)
    })))
    for (const [path, { stat }] of nodes) if (stat.version > 0) this.downgraded.add(path)
    const line = this.parseLine(parent, children.filter((c) => nodes.has(`${parent}/${c}`)))
      .map((e) => {
        const { data, stat } = nodes.get(e.id)!
        return { ...e, ...decodeNote(data.toString()), since: Number(stat.ctime.readBigInt64BE(0)), token: tokenOf(parentStat!, e.id.slice(parent.length + 1)) }
      })
    if (line.length === 0) return null
    const blocking = holdersIn(line)
    // A lock-delay phantom blocks the name but holds nothing: no holder, as on every store (leader() is null).
    const live = await this.guard(Promise.all(blocking.map(async (entry) => {
      if (this.slots.get(entry.owner)?.held) return true
      const alive = decodeNote(nodes.get(entry.id)!.data.toString()).alive
      return alive === undefined || (await session.exists(alive)) !== null
    })))
    const holders = blocking.filter((_, i) => live[i])
    const wall = Date.now()
    const summaries: HolderSummary[] = holders.map((entry) => {
      const mine = this.slots.get(entry.owner)
      // Another client's hold ends at its ttl, or at the latest one session timeout after that client went silent.
      return summaryOf(entry, wall + (mine?.held ? this.ttlLeft(mine) : session.timeoutMs))
    })
    const first = line[0]!
    return {
      name, kind: first.kind, fair: true, permits: first.permits, holders: summaries,
      waiters: waitersIn(line).map(waiterSummaryOf),
      lastToken: blocking.reduce((max, h) => (h.token > max ? h.token : max), 0n),
      note: `ZooKeeper sessions of this client (asked → granted): ${await this.sessionNote()}; ` +
        'the ensemble clamps sessions to 2-20 × tickTime. A live client ends each hold at its ttl; ' +
        'a crashed or cut-off client\'s holds end when its session expires',
    }
  }

  /** The names are the root's children (one read, no range in ZooKeeper): sorted here, then only the page's inspected. */
  async *list(prefix: string, page?: ListPage): AsyncIterable<LockInfo> {
    const session = await this.sessionFor(ADMIN_SESSION_MS)
    const parents = await this.guard(session.children(ROOT))
    const names = parents.map(nameOf).filter((n): n is string => n !== undefined)
    yield* inspectInOrder(namesOfPage(names, prefix, page), limitOf(page), (name) => this.inspect(name))
  }

  async forceRelease(name: string): Promise<boolean> {
    const session = await this.sessionFor(ADMIN_SESSION_MS)
    const parent = parentOf(name)
    const children = await this.guard(session.children(parent).catch((e: unknown) => (errorCode(e) === Exception.NO_NODE ? [] : Promise.reject(e))))
    const line = this.parseLine(parent, children)
    // Holders' clients see their node deleted (`lost`), waiters' clients theirs (`retry`).
    await Promise.all(line.map((e) => this.removeNode(session, e.id)))
    return line.length > 0
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    // Closing a session deletes its nodes at once: the holds end now, and their holders must know.
    for (const slot of this.slots.byOwner.values()) {
      if (slot.held) this.slots.wake(slot.owner, { type: 'lost', reason: 'its client was closed, which ends its ZooKeeper session and every node of it' })
    }
    const entries = [...this.slots.byOwner.values()]
    this.slots.clear()
    for (const entry of this.parents.values()) clearTimeout(entry.linger)
    this.observed.clear()
    // A closed client's delays end with it, as its sessions do.
    const phantoms = [...this.delays.values()]
    for (const timer of this.delays.keys()) clearTimeout(timer)
    this.delays.clear()
    const names = new Set([...this.parents.keys(), ...entries.map((e) => e.name), ...phantoms.map((p) => p.name)])
    await this.tidyUp([...entries, ...phantoms], [...names])
    for (const pending of this.sessions.values()) void pending.then((s) => s.close(), () => {})
    this.sessions.clear()
  }

  /**
   * On close: this client's nodes go now (closing the sessions would take
   * them too), then the parents of the names it used, each only if empty
   * (ZooKeeper refuses to remove a node with children: another client's
   * entries keep theirs), so a clean close leaves no empty parent behind.
   * Bounded by the command timeout: a silent ensemble is not waited for
   * (a parent left then is removed by the next client that empties it).
   */
  private async tidyUp(nodes: readonly ZkSlot[], names: readonly string[]): Promise<void> {
    const work = (async () => {
      await Promise.all(nodes.map((n) => this.removeNode(n.session, n.id).catch(() => {})))
      const session = nodes[0]?.session ?? await [...this.sessions.values()][0]?.catch(() => undefined)
      if (!session || session.expired) return
      await Promise.all(names.map((name) => session.remove(parentOf(name)).catch(() => {})))
    })()
    let timer: NodeJS.Timeout | undefined
    await Promise.race([work, new Promise((resolve) => (timer = setTimeout(resolve, this.target.commandTimeoutMs)))])
    clearTimeout(timer)
  }

  // ---- SlotStore ----

  async drop(slot: ZkSlot): Promise<void> {
    // An ended session took its ephemeral nodes with it.
    if (slot.session.expired) return
    await this.removeNode(slot.session, slot.id)
  }

  /**
   * The node stays in its place for the delay, then this client removes it.
   * Should this client die first, its session (longer than the ttl by the
   * delay, see sessionFor) ends no sooner than the delay would.
   */
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
    return { line: this.parseLine(parent, children), marker: undefined }
  }

  /** One exists-watch per blocker; a blocker already gone (or downgraded) means read the line again now. */
  standBehind(slot: ZkSlot, blockers: readonly LineEntry[]): void {
    const onChange = slot.onBlockerChange ??= (event: Event): void => {
      if (event.getType() === NODE_DATA_CHANGED) this.downgraded.add(event.getPath())
      void this.slots.recheck(slot)
    }
    void Promise.all(blockers.map((b) => slot.session.existsShared(b.id, onChange))).then(
      (stats) => {
        let stale = false
        stats.forEach((stat, i) => {
          if (!stat) stale = true
          else if (stat.version > 0 && !this.downgraded.has(blockers[i]!.id)) {
            this.downgraded.add(blockers[i]!.id)
            stale = true
          }
        })
        if (stale) void this.slots.recheck(slot)
      },
      () => setTimeout(() => void this.slots.recheck(slot), 100).unref(),
    )
  }

  /**
   * The hold's own ttl. Its session may end sooner if this client is cut off:
   * then the session's doubt timer (ZkSession) ends the hold first, by our clock.
   */
  /**
   * The hold's own ttl, but never past what the session surely covers (its
   * last answered request + its timeout): the session is as long as the ttl,
   * so a grant by a watch, with the last heartbeat a while ago, is counted
   * short. A hold extended beyond its session's length (a node can not move
   * to a longer session) keeps its own ttl, as before.
   */
  ttlLeft(slot: ZkSlot): number {
    const own = slot.endsAt - monotonicNow()
    const covered = slot.ttlMs <= slot.session.timeoutMs ? Math.min(own, slot.session.remainingMs()) : own
    // Other clients count a hold with a lock delay live only while its alive marker's session lasts.
    const marked = slot.alive && slot.ttlMs <= slot.alive.session.timeoutMs ? Math.min(covered, slot.alive.session.remainingMs()) : covered
    return Math.max(0, Math.floor(marked))
  }

  forgotten(slot: ZkSlot): void {
    this.downgraded.delete(slot.id)
    // Sent on the session that made it, so a later marker of the same owner made there is never removed by this.
    if (slot.alive) slot.alive.session.remove(slot.alive.path).catch(() => {})
    const entry = this.parents.get(slot.name)
    if (!entry) return
    entry.count -= 1
    if (entry.count > 0 || this.closed) return
    entry.linger = setTimeout(() => {
      if (this.parents.get(slot.name) !== entry || entry.count > 0) return
      this.parents.delete(slot.name)
      // Fails harmlessly while other clients still have entries under it.
      slot.session.remove(parentOf(slot.name)).catch(() => {})
    }, PARENT_LINGER_MS)
    entry.linger.unref()
  }

  // ---- helpers ----

  private adopt(slot: ZkSlot): void {
    this.slots.adopt(slot)
    const entry = this.parents.get(slot.name) ?? { count: 0 }
    clearTimeout(entry.linger)
    entry.count += 1
    this.parents.set(slot.name, entry)
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

  /** Children → line in sequence order. Entries of other recipes count as exclusive holders. */
  private parseLine(parent: string, children: readonly string[]): LineEntry[] {
    const line: { entry: LineEntry; sequence: number }[] = []
    for (const child of children) {
      const sequence = SEQUENCE.exec(child)
      if (!sequence) continue
      const path = `${parent}/${child}`
      const entry = decodeEntry(path, 0n, child.slice(0, -11), `zk-node:${child}`)
      line.push({ entry: this.downgraded.has(path) && entry.mode === 'write' ? { ...entry, mode: 'read' } : entry, sequence: Number(sequence[1]) })
    }
    return line.sort((a, b) => a.sequence - b.sequence).map((l) => l.entry)
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
      await this.createParent(session, parent)
    }
  }

  private async readParent(session: ZkSession, parent: string): Promise<{ children: string[]; parentStat: Stat }> {
    const { children, stat } = await this.guard(session.childrenWithStat(parent))
    return { children, parentStat: stat }
  }

  /** Arms the watch that tells a holder of a forced release; sent after the grant, not waited for. */
  private watchOwn(slot: ZkSlot): void {
    slot.session.exists(slot.id, slot.onOwnChange ??= this.ownWatch(slot.owner, slot.id)).then((stat) => {
      if (!stat && this.slots.get(slot.owner) === slot) this.slots.gone(slot, 'the store dropped it (released by force)')
    }, () => {
      // No answer: the session's heartbeat and doubt timer take over.
    })
  }

  private async createParent(session: ZkSession, parent: string): Promise<void> {
    for (const path of [ROOT, parent]) {
      await session.create(path, undefined, CreateMode.PERSISTENT).catch(async (error: unknown) => {
        if (errorCode(error) !== Exception.NODE_EXISTS) throw await zkDiagnosis(this.target, error)
      })
    }
  }

  /** This owner's node under `parent`, if an attempt made one; fails when the ensemble does not answer. */
  private async findOwn(session: ZkSession, parent: string, owner: string): Promise<string | undefined> {
    const children = await this.guard(session.children(parent)
      .catch((e: unknown) => (errorCode(e) === Exception.NO_NODE ? [] as string[] : Promise.reject(e))))
    const mine = children.find((c) => SEQUENCE.test(c) && c.slice(0, -11).endsWith(`|${owner}`))
    return mine && `${parent}/${mine}`
  }

  /** Removes a node of `owner` this client does not know of (made by an attempt whose reply was lost). */
  private async removeOwn(parent: string, owner: string): Promise<void> {
    // Any live session may remove it; one whose session ended took it along.
    const session = await this.sessionFor(ADMIN_SESSION_MS)
    const path = await this.findOwn(session, parent, owner)
    if (path) await this.removeNode(session, path)
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
    const session = await this.sessionFor(ttlMs)
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

  private async removeNode(session: ZkSession, path: string): Promise<void> {
    try {
      await session.remove(path)
    } catch (error) {
      if (errorCode(error) !== Exception.NO_NODE) throw await zkDiagnosis(this.target, error)
    }
  }

  /**
   * The session behind holds of `ttlMs`: the ttl (rounded up to whole
   * seconds), so a crashed client's holds end within their ttl, plus the lock
   * delay, so its nodes outlive the end of its holds by it. A heartbeat every
   * quarter of it keeps it confirmed; a hold counts only as far as the last
   * answered request covers it (ttlLeft). One per distinct length; the
   * ensemble clamps it (see inspect's note).
   */
  private sessionFor(ttlMs: number, lockDelayMs = 0): Promise<ZkSession> {
    // A call still on its way when close() ran must not open a session nobody closes:
    // its client would reconnect for ever once the ensemble is gone, keeping the process alive.
    if (this.closed) return Promise.reject(clientClosed('this ZooKeeper client'))
    const requested = Math.max(1000, Math.ceil((ttlMs + Math.max(0, lockDelayMs)) / 1000) * 1000)
    let pending = this.sessions.get(requested)
    if (!pending) {
      const session = new ZkSession(this.target, requested, (s) => this.sessionExpired(requested, s), (s) => this.sessionInDoubt(s), (s) => this.sessionReconnected(s))
      pending = session.open().then(() => session, async (error: unknown) => {
        throw await zkDiagnosis(this.target, error)
      })
      this.sessions.set(requested, pending)
      pending.catch(() => {
        if (this.sessions.get(requested) === pending) this.sessions.delete(requested)
      })
    }
    return pending
  }

  private async sessionNote(): Promise<string> {
    const parts: string[] = []
    for (const [requested, pending] of this.sessions) {
      const session = await pending.catch(() => undefined)
      if (session) parts.push(`${requested / 1000} s → ${session.timeoutMs / 1000} s`)
    }
    return parts.join(', ')
  }

  /** Every node of the session is gone: holders lose, waiters try again (on a new session). */
  private sessionExpired(requested: number, session: ZkSession): void {
    void this.sessions.get(requested)?.then((s) => {
      if (s === session) this.sessions.delete(requested)
    }, () => {})
    session.close()
    for (const slot of [...this.slots.byOwner.values()]) {
      if (slot.session === session) this.slots.gone(slot, 'its ZooKeeper session expired')
      // Its alive marker went: every other client counts the hold ended.
      else if (slot.alive?.session === session) this.slots.gone(slot, 'the ZooKeeper session of its alive marker expired')
    }
    // Its watches went with it: election observers look again, on a new session.
    for (const entry of this.observed.values()) if (entry.session === session) entry.onEvent(undefined as unknown as Event)
  }

  /**
   * The session is back on a new connection: a deletion notice sent while it
   * was cut may be lost, so each holder's node is looked at again (and its
   * watch set anew) and each waiter reads its line again.
   */
  private sessionReconnected(session: ZkSession): void {
    // Election observers look again (a notice may have been lost) and set their watches anew.
    for (const entry of this.observed.values()) if (entry.session === session) entry.onEvent(undefined as unknown as Event)
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
  private sessionInDoubt(session: ZkSession): void {
    for (const slot of [...this.slots.byOwner.values()]) {
      if (slot.session !== session) continue
      this.slots.gone(slot, 'no answer from ZooKeeper for a whole session timeout (the session may have expired)')
      this.slots.deleteEntry(slot)
    }
  }

  private async guard<T>(promise: Promise<T>): Promise<T> {
    try {
      return await promise
    } catch (cause) {
      throw await zkDiagnosis(this.target, cause)
    }
  }
}

/** One path segment per name: '/' and '.' escaped, so names never nest and never collide. */
function parentOf(name: string): string {
  return `${ROOT}/${encodeURIComponent(name).replace(/\./g, '%2E')}`
}

/** The alive marker of `owner`'s entry for `name`: one flat node per entry, under one persistent parent. */
function aliveMarkerOf(name: string, owner: string): string {
  return `${ALIVE_ROOT}/${parentOf(name).slice(ROOT.length + 1)}@${encodeURIComponent(owner)}`
}

function nameOf(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment)
  } catch {
    return undefined
  }
}

/**
 * The fencing token of entry `child`: its parent's creation zxid plus its
 * sequence number, known from the create's reply and the line read without
 * an extra request. Strictly increasing for the name:
 * - within one parent, sequence numbers increase in creation order;
 * - the sequence is the parent's cversion at the create, and every step of
 *   the cversion was a child create or delete in that parent, each a
 *   transaction with its own zxid after the parent's creation zxid p. So an
 *   entry with sequence k has p + k < its own creation zxid <= the last zxid
 *   of that parent; a parent made again after it was removed (empty, so
 *   holding nothing) has a creation zxid p' above every zxid before it, so
 *   p' + 0 > p + k for every earlier entry. zxids never go back.
 */
function tokenOf(parentStat: Stat, child: string): bigint {
  return parentStat.czxid.readBigInt64BE(0) + BigInt(SEQUENCE.exec(child)![1]!)
}

export const createZkDriver: DriverFactory = async (url: StoreUrl, options: DriverOptions) => {
  const target = zkTarget(url, options)
  const driver = new ZkDriver(target, options.clientId)
  const session = await (driver as unknown as { sessionFor(ttlMs: number): Promise<ZkSession> }).sessionFor(ADMIN_SESSION_MS)
  // The root exists (or can be made) and the URL's identity may use it.
  try {
    await session.create(ROOT, undefined, CreateMode.PERSISTENT).catch(async (error: unknown) => {
      if (errorCode(error) !== Exception.NO_NODE || target.chroot === '') throw error
      await ensureChroot(target)
      await session.create(ROOT, undefined, CreateMode.PERSISTENT)
    }).catch((error: unknown) => {
      if (errorCode(error) !== Exception.NODE_EXISTS) throw error
    })
  } catch (error) {
    await driver.close()
    throw await zkDiagnosis(target, error)
  }
  return driver
}

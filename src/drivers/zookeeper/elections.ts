import type { Event } from 'node-zookeeper-client'
import type { HoldRef } from '../../core/driver.js'
import { decodeNote, encodeNote } from '../sequenced/line.js'
import type { Slots } from '../sequenced/slots.js'
import { parentOf, tokenOf, type ZkLines } from './paths.js'
import { errorCode, Exception, zkDiagnosis, type ZkSession, type ZkTarget } from './session.js'
import { guarded, type ZkSessions } from './sessions.js'
import type { ZkSlot } from './slot.js'

/** An observed election name: its observers, the one watcher function of its watches, the session they are on. */
interface Observed {
  readonly observers: Set<() => void>
  readonly onEvent: (event: Event) => void
  session?: ZkSession
  /** The paths its watches are set on now (the name's node, its first entry), forgotten when nobody observes. */
  readonly paths: Set<string>
}

/**
 * Leader elections: the leader's node data carries its value (proclaim sets
 * it again), and observers of a name share a children watch on its parent
 * and a data watch on its first entry, set again after every event.
 */
export class ZkElections {
  /** Election observers by name: a children watch on the name's node and a data watch on its first entry. */
  private readonly observed = new Map<string, Observed>()
  private closed = false

  constructor(
    private readonly target: ZkTarget,
    private readonly sessions: ZkSessions,
    private readonly lines: ZkLines,
    private readonly slots: Slots<ZkSlot>,
  ) {}

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
    const session = await this.sessions.admin()
    const parent = parentOf(hold.name)
    const read = await guarded(this.target, session.childrenWithStat(parent)
      .catch((e: unknown) => (errorCode(e) === Exception.NO_NODE ? undefined : Promise.reject(e))))
    const head = read && this.lines.parse(parent, read.children)[0]
    if (!read || !head || head.owner !== hold.owner || tokenOf(read.stat, head.id.slice(parent.length + 1)) !== hold.token) return false
    const node = await guarded(this.target, session.getData(head.id))
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
      const session = await this.sessions.admin()
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
      const head = this.lines.parse(parent, children)[0]
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

  /** The session's watches are gone (it expired) or may have missed an event (it reconnected): its observers look again. */
  sessionChanged(session: ZkSession): void {
    for (const entry of this.observed.values()) if (entry.session === session) entry.onEvent(undefined as unknown as Event)
  }

  close(): void {
    this.closed = true
    this.observed.clear()
  }
}

import type { Etcd3, WatchBuilder, Watcher } from 'etcd3'
import type { EtcdTarget } from './connection.js'
import { idleKey, type Lines } from './keys.js'
import type { EtcdSlot } from './slot.js'

/** A name's watch stays this long after its last entry went, so a hot name keeps one watch. */
const NAME_WATCH_LINGER_MS = 10_000
/** Changes remembered per name, to close the gap between a line read and its watch events. */
const CHANGES_KEPT = 512

/** A key's last change seen on a name's watch. */
export interface Change {
  readonly revision: bigint
  readonly deleted: boolean
  readonly value: string
}

/** One prefix watch per name in use by this client; each waiter reacts only to its blockers' changes. */
export interface NameWatch {
  readonly ready: Promise<Watcher>
  readonly slots: Set<EtcdSlot>
  /** key → revision of its last change (delete or put) seen on the watch. */
  readonly changed: Map<string, Change>
  linger?: NodeJS.Timeout
}

/** What a name's watch tells the waiters of this client. */
export interface WatchEvents {
  /** A key of the name changed (recorded in `watch.changed` first). */
  changed(watch: NameWatch, key: string, change: Change): void
  /** The watch may have missed changes (a blip, or it was made again): its line is read again. */
  missed(name: string, watch: NameWatch): void
}

/**
 * This client's etcd watches: one prefix watch per name in use (kept a while
 * after its last entry left), the idle watcher that keeps etcd3's watch
 * stream open, and every watcher made (for elections too), to detach them
 * all on close.
 */
export class NameWatches {
  private readonly names = new Map<string, NameWatch>()
  /** Every watcher this client made, to detach them all on close (see detachAll). */
  private readonly watchers = new Set<Watcher>()
  private closed = false

  constructor(
    private readonly client: Etcd3,
    private readonly target: EtcdTarget,
    private readonly lines: Lines,
    private readonly events: WatchEvents,
    private idleWatcher: Watcher,
  ) {
    this.watchers.add(idleWatcher)
    this.keepIdle(idleWatcher)
  }

  /** etcd3's `create()`, keeping the watcher even while it is not yet connected. */
  createWatch(builder: WatchBuilder): Promise<Watcher> {
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

  /** The name's watch, made if there is none. */
  of(name: string): NameWatch {
    let watch = this.names.get(name)
    if (watch) return watch
    const changed = new Map<string, Change>()
    const ready = this.createWatch(this.client.watch().prefix(this.lines.prefix(name)))
    const created: NameWatch = { ready, slots: new Set(), changed }
    watch = created
    ready.then((watcher) => {
      watcher.on('put', (kv) => this.record(created, kv.key.toString(), { revision: BigInt(kv.mod_revision), deleted: false, value: kv.value.toString() }))
      watcher.on('delete', (kv) => this.record(created, kv.key.toString(), { revision: BigInt(kv.mod_revision), deleted: true, value: '' }))
      let blipped = false
      watcher.on('disconnected', () => {
        blipped = true
        resumeFromNow(watcher)
      })
      // Back after a blip, from the current revision: what changed meanwhile is read, not replayed.
      watcher.on('connected', () => {
        if (!blipped) return
        blipped = false
        this.events.missed(name, created)
      })
      // Cancelled by etcd all the same (for any other reason): made again.
      watcher.on('error', () => this.rewatch(name, created))
    }, () => {
      if (this.names.get(name) === created) this.names.delete(name)
    })
    this.names.set(name, watch)
    return watch
  }

  get(name: string): NameWatch | undefined {
    return this.names.get(name)
  }

  /** The watch is still the name's, and this client open. */
  current(name: string, watch: NameWatch): boolean {
    return !this.closed && this.names.get(name) === watch
  }

  /** A slot of the name uses its watch: it stays. */
  join(slot: EtcdSlot, watch: NameWatch): void {
    watch.slots.add(slot)
    clearTimeout(watch.linger)
  }

  /** A slot left this client's books: its name's watch goes a while after its last slot. */
  leave(slot: EtcdSlot): void {
    const watch = this.names.get(slot.name)
    if (!watch) return
    watch.slots.delete(slot)
    if (watch.slots.size === 0) this.lingerThenUnwatch(slot.name, watch)
  }

  /**
   * The name's watch, within the command timeout: etcd3 re-opens a broken
   * watch stream with a backoff (WatchReconnects) and has no deadline for it.
   * A watch that comes late stays for the next attempt, or goes after the
   * usual linger when nobody uses it.
   */
  ready(name: string, watch: NameWatch): Promise<Watcher> {
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        if (watch.slots.size === 0) this.lingerThenUnwatch(name, watch)
        reject(new Error(`the watch of "${name}" was not set up within ${this.target.commandTimeoutMs} ms`))
      }, this.target.commandTimeoutMs)
    })
    return Promise.race([watch.ready, late]).finally(() => clearTimeout(timer))
  }

  private record(watch: NameWatch, key: string, change: Change): void {
    watch.changed.delete(key)
    watch.changed.set(key, change)
    if (watch.changed.size > CHANGES_KEPT) watch.changed.delete(watch.changed.keys().next().value!)
    this.events.changed(watch, key, change)
  }

  /** A watch etcd cancelled: made again from the current revision, then what it watched is read again. */
  private rewatch(name: string, dead: NameWatch): void {
    if (this.closed || this.names.get(name) !== dead) return
    this.names.delete(name)
    void dead.ready.then((w) => w.cancel(), () => {}).catch(() => {})
    const fresh = this.of(name)
    for (const slot of dead.slots) fresh.slots.add(slot)
    dead.slots.clear()
    this.events.missed(name, fresh)
    if (fresh.slots.size === 0) this.lingerThenUnwatch(name, fresh)
  }

  private lingerThenUnwatch(name: string, watch: NameWatch): void {
    if (this.closed) return
    clearTimeout(watch.linger)
    watch.linger = setTimeout(() => this.unwatch(name, watch), NAME_WATCH_LINGER_MS)
    watch.linger.unref()
  }

  private unwatch(name: string, watch: NameWatch): void {
    if (watch.slots.size > 0 || this.names.get(name) !== watch) return
    this.names.delete(name)
    void watch.ready.then((w) => w.cancel(), () => {})
  }

  /** Close begins: no watch is made again from now on. */
  closing(): void {
    this.closed = true
  }

  /** Close: every name's watch and the idle watcher are cancelled (not waited for past the command timeout). */
  async cancelAll(): Promise<void> {
    for (const watch of this.names.values()) void watch.ready.then((w) => w.cancel(), () => {})
    this.names.clear()
    // etcd3 waits for etcd to confirm a watch's cancel, which never comes over
    // a cut or stalled stream: closing the client ends the stream anyway.
    let timer: NodeJS.Timeout | undefined
    await Promise.race([
      this.idleWatcher.cancel().catch(() => {}),
      new Promise((resolve) => (timer = setTimeout(resolve, this.target.commandTimeoutMs))),
    ])
    clearTimeout(timer)
  }

  /**
   * Close, once the client is closed: etcd3 re-opens its watch stream,
   * forever and on a timer, while any watcher is attached, even to a closed
   * client: one whose cancel etcd never confirmed (a cut stream), or one not
   * yet connected (whose create() never resolved, so nobody could cancel
   * it), kept the process alive. Once the stream is down (it says so with
   * 'disconnected'), a cancel detaches at once; each is also tried now.
   */
  detachAll(): void {
    for (const watcher of this.watchers) {
      watcher.removeAllListeners('disconnected')
      watcher.on('disconnected', () => detach(watcher))
      detach(watcher)
    }
    this.watchers.clear()
  }
}

/** Cancels a watcher of a closed client, whatever state its stream is in. */
function detach(watcher: Watcher): void {
  try {
    watcher.cancel().catch(() => {})
  } catch {
    // The stream is already gone: the 'disconnected' that follows detaches it.
  }
}

/**
 * etcd3 re-creates a watch after a reconnect from the revision after the last
 * one it saw. When that revision was compacted meanwhile, etcd cancels the
 * watch, and etcd3 then stalls every watch queued behind it on the stream
 * (it waits for a creation answer that never comes): no event reaches this
 * client any more. So a broken watch resumes from the current revision
 * instead, and its owner reads what it watched again (WakeUps.missed).
 */
export function resumeFromNow(watcher: Watcher): void {
  delete (watcher.request as { start_revision?: unknown }).start_revision
}

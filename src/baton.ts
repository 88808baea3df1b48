import type { Driver, HoldMode, LockInfo, LockKind, LockSpec, NodeView } from './core/driver.js'
import { parseDuration, parseTtl } from './core/duration.js'
import { Keeper } from './core/keeper.js'
import { validateName, validatePrefix } from './core/names.js'
import { checkOptions, describeProcess, optionalBoolean, parsePermits } from './core/options.js'
import { publicOwner } from './core/owner.js'
import { invalidArgument } from './core/errors.js'
import { compareNames } from './core/list.js'
import { LockHandle } from './primitives/lock.js'
import { Mutex, type MutexOptions } from './primitives/mutex.js'
import { RwLock, type RwLockOptions } from './primitives/rwlock.js'
import { Semaphore, type SemaphoreOptions } from './primitives/semaphore.js'
import { MultiLock, type MultiPart } from './primitives/multi.js'
import { Election, type ElectionOptions } from './primitives/election.js'

const DEFAULT_TTL = '30s'
/** Names one multi-lock may take: each is a hold to renew and a round trip to take. */
const MAX_MULTI_PARTS = 64

/** Options of `Baton.multi()`: those of a mutex, applied to every part. */
export type MultiOptions = MutexOptions

export interface HolderView {
  owner: string
  token: bigint
  mode: HoldMode
  /** Weighted permits: how many permits this hold takes (semaphores only). */
  weight?: number
  /** Reentrant handles on this hold in this client (1 for holds of other clients). */
  count: number
  /** Epoch ms by the store's clock. */
  expiresAt: number
  /** Who took it (JSON text: host, pid, client, cmd), when the store keeps it. */
  description?: string
  /** When the store granted it, epoch ms by the store's clock, when the store keeps it. */
  since?: number
  /** A leader's announced value (baton.election()), when the hold carries one. */
  value?: string
}

export interface WaiterView {
  owner: string
  mode: HoldMode
  /** Weighted permits: how many permits this waiter asks for (semaphores only). */
  weight?: number
  /** Who waits (JSON text: host, pid, client, cmd), when the store keeps it. */
  description?: string
  /** When it joined the line, epoch ms by the store's clock, when the store keeps it. */
  since?: number
}

export interface LockView {
  name: string
  kind: LockKind
  fair: boolean
  permits: number
  holders: HolderView[]
  waiters: WaiterView[]
  lastToken: bigint
  /** How the store bent the settings asked for (e.g. a lease floor), when it did. */
  note?: string
  /** Quorum stores (redlock://): each node's state and holders. */
  nodes?: readonly NodeView[]
}

/** Options of `Baton.list()`. */
export interface ListOptions {
  /** Only names starting with this. */
  prefix?: string
  /** Only names after this one (byte order): pass the last name of the previous page. */
  after?: string
  /** At most this many locks. */
  limit?: number
}

/** A client of one store. Create it with connect(). */
export class Baton {
  /** @internal */
  readonly keeper: Keeper
  private closed: Promise<void> | undefined

  /** `description`: who this client is (AcquireRequest.description), by default this host and pid. */
  constructor(readonly driver: Driver, clientId: string, description = describeProcess()) {
    this.keeper = new Keeper(driver, clientId)
    this.keeper.description = description
  }

  /** Which store this client talks to: 'memory', 'redis', … */
  get store(): string {
    return this.driver.store
  }

  /**
   * An exclusive lock on `name`.
   * @example
   * await baton.mutex('orders/42', { ttl: '10s' }).using(async (lease) => {
   *   await chargeCard({ fencingToken: lease.token, signal: lease.signal })
   * })
   */
  mutex(name: string, options?: MutexOptions): Mutex {
    const opts = checkOptions<MutexOptions>(options, 'mutex()', ['ttl', 'fair', 'reentrant', 'lockDelay'])
    const spec = this.spec(name, 'mutex', 'exclusive', 1, opts)
    return new Mutex(this.keeper, spec, this.ttl(opts.ttl), optionalBoolean(opts.reentrant, 'reentrant', true))
  }

  /**
   * A read-write lock on `name`: `.read()` is shared, `.write()` exclusive.
   * @example
   * const config = baton.rwlock('config')
   * await config.read().using(async () => readConfig())
   * await config.write().using(async (lease) => writeConfig(lease.token))
   */
  rwlock(name: string, options?: RwLockOptions): RwLock {
    const opts = checkOptions<RwLockOptions>(options, 'rwlock()', ['ttl', 'fair', 'reentrant', 'lockDelay'])
    const ttlMs = this.ttl(opts.ttl)
    const reentrant = optionalBoolean(opts.reentrant, 'reentrant', true)
    const read = new LockHandle(this.keeper, this.spec(name, 'rwlock', 'read', 1, opts), ttlMs, reentrant)
    const write = new LockHandle(this.keeper, this.spec(name, 'rwlock', 'write', 1, opts), ttlMs, reentrant)
    return new RwLock(read.name, read, write)
  }

  /**
   * At most `permits` holders of `name` at once; each permit is its own Lease.
   * @example
   * const slots = baton.semaphore('gpu', { permits: 4, ttl: '1m' })
   * await slots.using(async () => train())
   */
  semaphore(name: string, options: SemaphoreOptions): Semaphore {
    const opts = checkOptions<SemaphoreOptions>(options, 'semaphore()', ['permits', 'ttl', 'fair', 'lockDelay'])
    const spec = this.spec(name, 'semaphore', 'permit', parsePermits(opts.permits), opts)
    return new Semaphore(this.keeper, spec, this.ttl(opts.ttl), false)
  }

  /**
   * Several names taken as one lease: all or none, in one global order (so
   * no deadlock whatever order callers list them in), one signal, renewed and
   * released together. A part may be `{ name, mode: 'read' | 'write' }` to
   * take one side of a read-write lock.
   * @example
   * const lease = await baton.multi(['accounts/1', 'accounts/7', 'ledger'], { ttl: '30s' }).acquire({ wait: '5s' })
   * try { await transfer(lease.tokens) } finally { await lease.release() }
   */
  multi(parts: readonly MultiPart[], options?: MultiOptions): MultiLock {
    const opts = checkOptions<MultiOptions>(options, 'multi()', ['ttl', 'fair', 'reentrant', 'lockDelay'])
    if (!Array.isArray(parts) || parts.length === 0) throw invalidArgument('multi() takes a non-empty array of names')
    if (parts.length > MAX_MULTI_PARTS) throw invalidArgument(`multi() takes at most ${MAX_MULTI_PARTS} names, got ${parts.length}`)
    const ttlMs = this.ttl(opts.ttl)
    const reentrant = optionalBoolean(opts.reentrant, 'reentrant', true)
    return new MultiLock(parts.map((part) => {
      const { name, mode = 'exclusive' } = typeof part === 'string' ? { name: part } : (part ?? {}) as Exclude<MultiPart, string>
      if (mode !== 'exclusive' && mode !== 'read' && mode !== 'write') throw invalidArgument(`multi(): mode must be 'exclusive', 'read' or 'write', got ${JSON.stringify(mode)}`)
      const spec = this.spec(name, mode === 'exclusive' ? 'mutex' : 'rwlock', mode, 1, opts)
      return new LockHandle(this.keeper, spec, ttlMs, reentrant)
    }))
  }

  /**
   * Leader election on `name`: one leader at a time, elected in campaign
   * order, its term a lease (fencing token, loss signal, renewed by the
   * watchdog), its announced value readable by all and followed without
   * polling. A fair mutex underneath: see docs/election.md.
   * @example
   * const election = baton.election('billing/scheduler', { ttl: '10s' })
   * const leadership = await election.campaign({ value: 'host-a:8080' })
   * for await (const leader of election.observe({ signal })) console.log(leader?.value)
   */
  election(name: string, options?: ElectionOptions): Election {
    const opts = checkOptions<ElectionOptions>(options, 'election()', ['ttl', 'lockDelay'])
    const spec = this.spec(name, 'mutex', 'exclusive', 1, { fair: true, lockDelay: opts.lockDelay })
    return new Election(this.keeper, spec, this.ttl(opts.ttl))
  }

  /** Who holds `name`, who waits, and the last token; null when the name is free. */
  async inspect(name: string): Promise<LockView | null> {
    this.keeper.checkOpen()
    const info = await this.driver.inspect(validateName(name))
    return info && this.view(info)
  }

  /**
   * Locks in use whose name starts with `prefix`, in byte order of their
   * names. Paged: `after` (the last name of the previous page) and `limit`
   * (at most this many) let a caller walk 10,000 locks a page at a time,
   * each page costing the store about its own size. Without them, every lock.
   */
  async list(options?: ListOptions): Promise<LockView[]> {
    const opts = checkOptions<ListOptions>(options, 'list()', ['prefix', 'after', 'limit'])
    const prefix = validatePrefix(opts.prefix)
    const page: { after?: string; limit?: number } = {}
    if (opts.after !== undefined) page.after = validateName(opts.after, '"after" name')
    if (opts.limit !== undefined) {
      if (typeof opts.limit !== 'number' || !Number.isInteger(opts.limit) || opts.limit < 1) {
        throw invalidArgument(`"limit" must be a whole number of at least 1, got ${String(opts.limit)}`)
      }
      page.limit = opts.limit
    }
    this.keeper.checkOpen()
    const views: LockView[] = []
    for await (const info of this.driver.list(prefix, page)) {
      views.push(this.view(info))
      if (views.length === page.limit) break
    }
    return views.sort((a, b) => compareNames(a.name, b.name))
  }

  /** Admin: drops every hold and waiter of `name`; holders' signals fire. True if it was held. */
  async forceRelease(name: string): Promise<boolean> {
    this.keeper.checkOpen()
    return this.driver.forceRelease(validateName(name))
  }

  /**
   * Ends pending acquires with CLOSED (leaving no line entry behind), stops
   * renewals and closes the store connection. Holds then expire by their ttl.
   * Later calls on this client fail with CLOSED. Idempotent.
   */
  close(): Promise<void> {
    this.closed ??= this.keeper.close().then(() => this.driver.close())
    return this.closed
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close()
  }

  /** @internal shared by the primitives' factories */
  spec(
    name: string, kind: LockKind, mode: HoldMode, permits: number,
    opts: { fair?: boolean; lockDelay?: MutexOptions['lockDelay'] },
  ): LockSpec {
    return {
      name: validateName(name),
      kind,
      mode,
      permits,
      fair: optionalBoolean(opts.fair, 'fair', false),
      lockDelayMs: opts.lockDelay === undefined ? 0 : parseDuration(opts.lockDelay, 'lockDelay', { allowZero: true }),
    }
  }

  /** @internal */
  ttl(value: MutexOptions['ttl']): number {
    return parseTtl(value ?? DEFAULT_TTL)
  }

  private view(info: LockInfo): LockView {
    return {
      name: info.name,
      kind: info.kind,
      fair: info.fair,
      permits: info.permits,
      // One id per hold whichever path shows it: see publicOwner.
      holders: info.holders.map((h) => ({ ...h, owner: publicOwner(h.owner), count: this.keeper.countOf(h.owner) })),
      waiters: info.waiters.map((w) => ({ ...w, owner: publicOwner(w.owner) })),
      lastToken: info.lastToken,
      ...(info.note !== undefined ? { note: info.note } : {}),
      ...(info.nodes ? { nodes: info.nodes.map((n) => (n.holders ? { ...n, holders: n.holders.map((h) => ({ ...h, owner: publicOwner(h.owner) })) } : n)) } : {}),
    }
  }
}

/**
 * THE driver interface: everything a store must do, and nothing more.
 *
 * A driver makes single attempts and reports facts; the core owns policy.
 * Waiting deadlines, AbortSignal, reentrancy, the watchdog, durations, name
 * validation and diagnostics events never appear in a driver. Drivers return
 * status unions and throw only for transport failures (wrapped with
 * `backendUnavailable`, or QUORUM_NOT_REACHED for quorum stores).
 *
 * The shape fits every store baton has (docs/design.md):
 * - Redis / Redlock: TTL keys changed by Lua scripts, pub/sub wake-ups;
 * - etcd: lease-attached keys ordered by create revision, watch on the predecessor;
 * - ZooKeeper: ephemeral sequential nodes, watch on the predecessor;
 * - PostgreSQL: a table changed by one statement per operation, LISTEN/NOTIFY;
 * - HTTP (a baton server): `acquire` may long-poll, `watch` may be a no-op.
 */

import type { StoreUrl } from './url.js'

/** What a name is used as. A name has one kind while it has holders or waiters. */
export type LockKind = 'mutex' | 'rwlock' | 'semaphore'

/** How one hold takes the name: exclusive (mutex), read / write (rwlock), permit (semaphore). */
export type HoldMode = 'exclusive' | 'read' | 'write' | 'permit'

/** Everything that identifies the kind of hold asked for; sent with every acquire. */
export interface LockSpec {
  readonly name: string
  readonly kind: LockKind
  readonly mode: HoldMode
  /** Grant strictly in arrival order (no barging into a free lock while others wait). */
  readonly fair: boolean
  /** How many holders may share the name: 1 for mutex and write, N for a semaphore. */
  readonly permits: number
  /**
   * Lock delay: a hold that *expired* (not one released or forced) keeps
   * occupying its own slot for this long, as a phantom holder of the same mode:
   * an expired writer or mutex holder blocks everyone, an expired reader blocks
   * writers only, an expired permit keeps one permit taken. The memory store is
   * the reference for this; every store does the same.
   */
  readonly lockDelayMs: number
  /**
   * Weighted permits: how many of the semaphore's `permits` this hold takes,
   * a whole number from 1 to `permits` (the core refuses anything else with
   * INVALID_ARGUMENT before a store sees it). Absent means 1, and is always 1
   * for mutex and rwlock holds. Part of the spec, not only of the acquire,
   * because every store keeps it beside the hold (a Redis member, an etcd
   * value, a ZooKeeper node, a PostgreSQL row) and finds the hold again by
   * it: a grant counts the weights of the holds and of lock-delay phantoms
   * (an expired weighted permit keeps its whole weight taken during its
   * lock delay), never their number. Added for `acquire({ weight })`
   * (Go's semaphore.Weighted, Redisson's permit counts): a capacity that
   * requests use unevenly. FIFO by default: a heavy waiter at the head of the
   * line is never passed by lighter ones behind it (docs/weighted-permits.md).
   */
  readonly weight?: number
}

export interface AcquireRequest extends LockSpec {
  /** Unique per hold: `<clientId>.<random>`; the store checks it on extend and release. */
  readonly owner: string
  /** Lease length the store must enforce, counted from when the store grants. */
  readonly ttlMs: number
  /**
   * If not granted now, join (or stay in) the waiting line so that a release can
   * hand the lock over to this owner and wake it through `watch`. A line entry the
   * owner does not refresh within `queueTtlMs` is dropped, so a dead waiter never
   * stalls the line for longer than that.
   */
  readonly enqueue: boolean
  readonly queueTtlMs: number
  /**
   * Not the first attempt of this owner: a hand-over may already have made it
   * the holder (its wake-up lost on the way). A hint only: every attempt must
   * be idempotent whatever this says. An owner that already holds the name is
   * answered `granted` with its existing token and remaining lease, never given
   * a second hold; an owner already in line keeps its place (its entry is
   * refreshed), never queued twice. A reply lost in flight and a re-sent
   * attempt must therefore never leave a hold or a line entry nobody releases.
   */
  readonly retry: boolean
  /**
   * Who asks, for operators (`ls`, `inspect`, the dashboard, busy messages):
   * a short JSON text the core builds (host, pid, the client's name, the
   * command of `baton run`), at most MAX_DESCRIPTION_BYTES. Opaque to the
   * store, which keeps it beside the hold or line entry and gives it back in
   * HolderSummary / waiters together with when the store granted or queued
   * it. Added to the interface because "who holds it" cannot be answered
   * from an owner id, and every store must answer it the same way.
   */
  readonly description?: string
  /**
   * Leader election (baton.election()): the value the candidate announces,
   * kept by the store beside the hold (and beside the line entry, so a
   * hand-over grants it with its value) and shown in HolderSummary.value.
   * Added because a leader's address must be readable by everyone in the
   * same store read that says who leads: a value kept elsewhere could name
   * a leader that is gone. At most MAX_VALUE_BYTES (the core checks).
   * Undefined for plain locks; a store that can not keep it refuses the
   * acquire with `conflict` and the reason (Redlock). The lock server keeps
   * the lease secret its servers share this way too (src/server/lease-secret.ts),
   * rather than through a new call every store would have to implement.
   */
  readonly value?: string
}

/** Bound on `AcquireRequest.value` (and `Driver.proclaim`), in UTF-8 bytes. */
export const MAX_VALUE_BYTES = 4096

/** Bound on `AcquireRequest.description`, in UTF-8 bytes; the core truncates, stores may rely on it. */
export const MAX_DESCRIPTION_BYTES = 256

/** The store's current holder, when known, for LOCK_TIMEOUT messages and inspect. */
export interface HolderSummary {
  readonly owner: string
  readonly token: bigint
  readonly mode: HoldMode
  /** Weighted permits: how many permits this hold takes (semaphores; absent means 1). */
  readonly weight?: number
  /** Epoch ms, by the store's clock. */
  readonly expiresAt: number
  /** The description sent with the acquire that granted this hold, when the store has it. */
  readonly description?: string
  /** When the store granted this hold, epoch ms by the store's clock, when the store has it. */
  readonly since?: number
  /** The announced value (AcquireRequest.value, or the last `proclaim`), for holds that carry one. */
  readonly value?: string
}

/** One owner in a name's waiting line, as inspect shows it. */
export interface WaiterSummary {
  readonly owner: string
  readonly mode: HoldMode
  /** Weighted permits: how many permits this waiter asks for (semaphores; absent means 1). */
  readonly weight?: number
  /** The description sent with the owner's acquire, when the store has it. */
  readonly description?: string
  /** When the owner joined the line, epoch ms by the store's clock, when the store has it. */
  readonly since?: number
}

export type AcquireResult =
  /** Granted: `ttlMs` is the lease the store set, counted from its grant. */
  | { readonly status: 'granted'; readonly token: bigint; readonly ttlMs: number }
  /**
   * Not granted now. `retryAfterMs`: when trying again could succeed even
   * without a wake-up. The core sleeps until then (or until a wake-up, or the
   * line entry's refresh, whichever is first), so this is how a store keeps a
   * dying holder from bringing every waiter back at once: a store that hands
   * over answers the head of its line with the holders' lease end, and the
   * waiters behind it (served by hand-overs) with at least their `queueTtlMs`.
   */
  | { readonly status: 'busy'; readonly retryAfterMs: number; readonly holder?: HolderSummary }
  /** Can never succeed as asked (another kind or permit count uses the name): the core throws INVALID_ARGUMENT. */
  | { readonly status: 'conflict'; readonly detail: string }

/** A hold the core has: enough for the store to find and check it. */
export interface HoldRef extends LockSpec {
  readonly owner: string
  readonly token: bigint
}

export type ExtendResult =
  | { readonly status: 'extended'; readonly ttlMs: number }
  /** The store no longer has this hold (expired, forced, replaced). */
  | { readonly status: 'lost' }

/** What a store says to one waiting or holding owner, unasked. */
export type Wake =
  /** The lock was handed over to this owner by a release: it holds it now. */
  | { readonly type: 'granted'; readonly token: bigint; readonly ttlMs: number }
  /** Something changed; trying again may succeed. */
  | { readonly type: 'retry' }
  /**
   * The hold is gone (forced release, release through another client, session
   * loss); stop at once. Sent only to owners that hold (or were just granted)
   * the name, never to mere waiters, so the core treats any `lost` for an
   * owner as the end of its hold, whether it arrives before or after the
   * grant is seen. `cause`, when the store knows it: `forced` (forceRelease)
   * or `released` (an ordinary release of this hold sent through another
   * client, see Driver.release). Added for the lock server, which reports a
   * lease another server released as a release, not as a loss or an expiry;
   * stores that can not tell (a deleted etcd key or ZooKeeper node says
   * neither) leave it out.
   */
  | { readonly type: 'lost'; readonly reason: string; readonly cause?: 'forced' | 'released' }

export interface LockInfo {
  readonly name: string
  readonly kind: LockKind
  readonly fair: boolean
  readonly permits: number
  readonly holders: readonly HolderSummary[]
  /** Owners in line, in the order they will be served. */
  readonly waiters: readonly WaiterSummary[]
  /** Highest token granted so far for this name. */
  readonly lastToken: bigint
  /**
   * How the store bends what was asked, when it does (a lease floor that
   * raises short ttls, for instance). Optional: stores that keep every
   * setting exactly leave it out. Added for etcd and ZooKeeper, whose lease
   * and session floors must be shown, never applied silently.
   */
  readonly note?: string
  /**
   * Stores of several independent nodes (Redlock): what each node says and
   * whether its votes count. Optional, so other stores leave it out; added
   * because a quorum store's inspect must show which nodes are excluded
   * (restart guard) or down, which no single holder list can say.
   */
  readonly nodes?: readonly NodeView[]
}

/** One node of a quorum store, as inspect shows it. */
export interface NodeView {
  /** host:port, never with credentials. */
  readonly node: string
  /** counted: its votes count; excluded: restart guard; unverified: reconnected, run_id not checked yet; down: no answer. */
  readonly state: 'counted' | 'excluded' | 'unverified' | 'down'
  readonly reason?: string
  readonly holders?: readonly HolderSummary[]
  readonly lastToken?: bigint
}

/** One page of `Driver.list`: names after `after` (a cursor: the last name of the previous page), at most `limit`. */
export interface ListPage {
  readonly after?: string
  readonly limit?: number
}

/**
 * What a release of an owner that holds nothing known (a failed or abandoned
 * attempt: no token) names, so the store can remove whatever the attempt may
 * still make (its reply lost, or the request sent late). `ttlMs` is the
 * attempt's own: a store whose entries live on sessions by length
 * (ZooKeeper) looks for the leftover on the very session the attempt was
 * sent on, whose requests run in order behind it; a look on another session
 * can run before a create the client library still holds and find nothing.
 */
export interface AttemptSpec extends LockSpec {
  readonly owner: string
  readonly ttlMs?: number
}

export interface Capabilities {
  /** fair: true keeps strict arrival order. */
  readonly fair: boolean
  readonly rwlock: boolean
  readonly semaphore: boolean
  readonly lockDelay: boolean
  /** A release hands the lock to the next waiter in the same store operation. */
  readonly handoff: boolean
  /** Tokens survive a restart of the store (false for memory and non-persistent Redis). */
  readonly durableTokens: boolean
}

export interface Driver {
  /** Short store name for messages: 'memory', 'redis', 'redlock', ... */
  readonly store: string
  readonly capabilities: Capabilities

  /** ONE attempt: grant now, or say when to try again (and wait in line if asked). */
  acquire(request: AcquireRequest): Promise<AcquireResult>

  /** Renews holds, in one batch where the store allows. Results are in input order. */
  extend(holds: readonly HoldRef[], ttlMs: number): Promise<ExtendResult[]>

  /**
   * Releases a hold, or leaves the line if the owner only waits; hands the lock
   * to the next waiter. Returns whether the owner held it. Never fails for an
   * unknown owner (release is idempotent).
   *
   * A hold released through another client than its owner's (a store that
   * releases by owner and token lets any client do it: the lock server does,
   * for a lease id granted by another server sharing the store) gets its
   * owner's client a `lost` wake-up with cause `released`, as a forced
   * release does with `forced`: that client learns at once, not at its next
   * renewal or at the lease's end (a lock server would report an expiry).
   * It costs nothing when a client releases its own holds (the usual case):
   * only a foreign release publishes. Stores whose releases only reach the
   * calling client's own holds (etcd, ZooKeeper, http) answer false there.
   */
  release(hold: HoldRef | AttemptSpec): Promise<boolean>

  /**
   * Routes store-side wake-ups for `owner` (a waiter or holder of `name`) to
   * `onWake` until the returned function is called. Registered before the
   * first acquire attempt, so a hand-over can not be missed.
   */
  watch(name: string, owner: string, onWake: (wake: Wake) => void): () => void

  /**
   * Turns a write hold into a read hold of the same owner and token, in one
   * store operation, and admits the readers queued behind it. False if the
   * hold is gone. Only for stores with `capabilities.rwlock`.
   */
  downgrade?(hold: HoldRef): Promise<boolean>

  /**
   * Leader election: replaces the value kept beside `hold` (see
   * AcquireRequest.value) in one store operation, keeping the hold, its
   * token and its lease. False if the store no longer has the hold. Added
   * because a leader must re-announce itself (a new address) without giving
   * up its term, which a release and a new acquire would do. Absent: the
   * store offers no election (the core refuses proclaim with the reason).
   */
  proclaim?(hold: HoldRef, value: string): Promise<boolean>

  /**
   * Leader election: calls `onChange` (no arguments) after anything that
   * may have changed who holds `name` or a holder's value — a grant, a
   * release, a hand-over, a proclaim, a forced release, and where the store
   * sees it, an expiry — and after a reconnect (notices may have been
   * missed), until the returned function is called. A notice, not a
   * record: the core re-reads `inspect` on each, so a store may send
   * spurious or coalesced notices, never none after a change. Added because
   * election.observe() must follow the leader without polling, and `watch`
   * only reaches owners that wait or hold. Each store reuses its own
   * notice path (memory: an emitter; Redis: pub/sub on the name's channel;
   * etcd: the name's prefix watch; ZooKeeper: a children watch; PostgreSQL:
   * LISTEN; HTTP: the server's event stream). Absent: no election.
   */
  observe?(name: string, onChange: () => void): () => void

  /**
   * Why this store refuses leader election, when it does (Redlock): the
   * core refuses campaign() and observe() with INVALID_ARGUMENT and this
   * reason, before anything reaches the store. Added so the refusal names
   * the store's own reason rather than a missing method.
   */
  readonly electionRefusal?: string

  inspect(name: string): Promise<LockInfo | null>
  /**
   * Locks in use whose name starts with `prefix`, in UTF-8 byte order of
   * their names, strictly after `page.after`, at most `page.limit` of them.
   * The page is the store's business, not the caller's: a server listing
   * 50 of 10,000 locks must not read and sort all 10,000 for every page (the
   * dashboard's first render with 10,000 locks took 2 s that way), so each
   * store uses its own ordered range where it has one (PostgreSQL ORDER BY
   * ... LIMIT, etcd's key range, ZooKeeper's children) and inspects only
   * the page's names. Without `page`, every lock (the old call shape).
   */
  list(prefix: string, page?: ListPage): AsyncIterable<LockInfo>
  /**
   * Frees `name` at once: drops every hold (holders get a `lost` wake-up),
   * grants it to nobody, and drops the line, waking every waiter whose entry
   * is live with `retry`: live waiters line up again at once (in the order
   * their retries arrive), so a dead waiter at the head can never be handed
   * the name. No lock delay applies. True if anything was held.
   */
  forceRelease(name: string): Promise<boolean>
  close(): Promise<void>
}

/** Options every driver factory receives from connect(). */
export interface DriverOptions {
  /** This client's id; owners of this client start with it. */
  readonly clientId: string
  readonly connectTimeoutMs: number
  readonly commandTimeoutMs: number
  /**
   * Bounded state (`?fenceTtl=` in the store URL, default 1 h): what a store
   * keeps for a name nobody holds or awaits, fence counter included, may vanish
   * this long after the name's last hold or line entry ended. Tokens must still
   * strictly increase afterwards; each driver documents what that rests on
   * (a store clock floor, a sequence, a revision).
   */
  readonly fenceTtlMs: number
}

export type DriverFactory = (url: StoreUrl, options: DriverOptions) => Promise<Driver>

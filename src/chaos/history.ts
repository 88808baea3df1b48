/**
 * A chaos or verify history: what every client did and saw, as events.
 *
 * Every time (`at`, `invokedAt`, `deadline`, …) is milliseconds of the
 * machine's monotonic clock (historyNow(): CLOCK_MONOTONIC, one clock for
 * every process of the machine, never stepped), whichever process stamped
 * it. Tokens are decimal strings: events cross process boundaries as JSON.
 */
export { historyNow } from '../cli/verify/clock.js'

/** The primitives a plan uses; `fair` is a fair mutex. */
export type Primitive = 'mutex' | 'fair' | 'rwlock' | 'semaphore' | 'election' | 'multi'
export const PRIMITIVES: readonly Primitive[] = ['mutex', 'fair', 'rwlock', 'semaphore', 'election', 'multi']

export type OpKind =
  | 'acquire' | 'tryAcquire' | 'release' | 'extend' | 'downgrade' | 'forceRelease'
  | 'campaign' | 'proclaim' | 'resign' | 'leader' | 'observe' | 'inspect'

/** How a hold may share its name: a semaphore hold counts its weight against `permits`. */
export type HoldMode = 'exclusive' | 'read' | 'write' | 'permit'

/** Who did it: process index, client index in that process. */
export interface Actor {
  readonly process: number
  readonly client: number
}

/** An operation was invoked (`op` is unique in the history). */
export interface Invoke extends Actor {
  readonly type: 'invoke'
  readonly op: string
  readonly kind: OpKind
  readonly primitive: Primitive
  /** The names it touches (several for a multi-lock). */
  readonly names: readonly string[]
  readonly at: number
  /** The lease it acts on (release, extend, downgrade, proclaim, resign). */
  readonly lease?: string
}

/** The operation returned: `ok`, `busy` (tryAcquire found the name taken) or an error code. */
export interface Complete extends Actor {
  readonly type: 'complete'
  readonly op: string
  readonly at: number
  readonly outcome: 'ok' | 'busy' | 'error'
  readonly code?: string
  readonly message?: string
  /** LOCK_TIMEOUT: the holder it named (seen by one of the call's own attempts or reads). */
  readonly holder?: SeenHolder
  /** forceRelease: whether the store said it dropped something (true) or found nothing to drop. */
  readonly answer?: boolean
}

/** A hold as a store read showed it: its owner (as baton shows owners) and token. */
export interface SeenHolder {
  readonly owner: string
  readonly token: string
}

/** A client's id: every owner its attempts use begins with `${clientId}.` (src/core/owner.ts). */
export interface ClientId extends Actor {
  readonly type: 'client'
  readonly clientId: string
  readonly at: number
}

/** `baton.inspect(name)` answered (op `op`, completed at `at`): every hold the store had. */
export interface Seen extends Actor {
  readonly type: 'seen'
  readonly op: string
  readonly name: string
  readonly at: number
  readonly holders: readonly SeenHolder[]
}

/** A hold began (an acquire or campaign returned it): one per name of a multi-lock. */
export interface Grant extends Actor {
  readonly type: 'grant'
  readonly op: string
  readonly lease: string
  readonly primitive: Primitive
  readonly name: string
  readonly mode: HoldMode
  readonly token: string
  /** The owner the store keeps it under (as baton shows owners). */
  readonly owner?: string
  readonly weight: number
  /** Semaphores: how many permits the name has. */
  readonly permits: number
  readonly at: number
  /** The deadline the client knows for it, at grant (at + remainingMs()). */
  readonly deadline: number
}

/** The client learnt of a later deadline (an extend returned; a probe saw more time left). */
export interface Renew extends Actor {
  readonly type: 'renew'
  readonly lease: string
  readonly at: number
  readonly deadline: number
}

/** The client gave the hold up (release or resign invoked) or, `mode` given, downgraded it. */
export interface End extends Actor {
  readonly type: 'end'
  readonly lease: string
  readonly at: number
  readonly why: 'release' | 'resign' | 'downgrade'
  /** A downgrade: the read hold's owner and token (a hold of its own in the store). */
  readonly readOwner?: string
  readonly readToken?: string
}

/** The lease's signal fired (or `held` turned false) and the client saw it at `at`. */
export interface Loss extends Actor {
  readonly type: 'loss'
  readonly lease: string
  readonly at: number
  readonly code?: string
}

/**
 * The client read its lease at a random moment: `held`, `signal.aborted`,
 * `remainingMs()`. When it said held with no time left, it read again after
 * `recheckedAfterMs` of busy waiting (no timer could run meanwhile): `stillHeld`.
 */
export interface Probe extends Actor {
  readonly type: 'probe'
  readonly lease: string
  readonly at: number
  readonly held: boolean
  readonly aborted: boolean
  readonly remainingMs: number
  readonly stillHeld?: boolean
  readonly stillNotAborted?: boolean
  readonly recheckedAfterMs?: number
}

/** A leader seen: by `election.leader()` (`via: 'leader'`) or an observe stream (`via: 'observe'`, `stream` its id). */
export interface Observation extends Actor {
  readonly type: 'observation'
  readonly via: 'leader' | 'observe'
  readonly stream: string
  readonly name: string
  readonly at: number
  /** Null while nobody leads. */
  readonly token: string | null
  readonly holder?: string
  readonly value?: string
}

/** A write at the fenced resource, stamped by the resource. */
export interface Write extends Actor {
  readonly type: 'write'
  readonly lease: string
  readonly name: string
  readonly token: string
  readonly at: number
  readonly accepted: boolean
  /** The highest token the resource had accepted for `name` before. */
  readonly highestBefore: string | null
  /**
   * A read-modify-write (`baton verify`'s counter): the version the writer
   * read, and the resource's version when the write arrived. An accepted
   * write whose two differ lost an update.
   */
  readonly readVersion?: number
  readonly versionAtWrite?: number
}

/** A fault the nemesis (or `--fault-cmd`) made. */
export interface Fault {
  readonly type: 'fault'
  readonly kind: string
  readonly target: string
  readonly at: number
  healedAt?: number
  readonly detail?: string
  /**
   * The store (or, with `names`, the part of it that keeps those names) lost
   * every hold and started again empty at `at`: a hold a read finds there
   * later was granted after this moment.
   */
  readonly emptied?: { readonly at: number; readonly names?: readonly string[] }
}

/** What a name looked like in the store once every client had closed and every ttl had run out. */
export interface Leftover {
  readonly type: 'leftover'
  readonly name: string
  readonly at: number
  readonly holders: number
  readonly waiters: number
}

export type HistoryEvent = Invoke | Complete | Grant | Renew | End | Loss | Probe | Observation | Write | Fault | Leftover | ClientId | Seen

export interface History {
  readonly seed: number
  /** The store kind ('redis', 'redis-cluster', …): which exceptions apply. */
  readonly store: string
  readonly events: HistoryEvent[]
  /** The longest ttl any hold asked for: the windows of the known exceptions are counted in it. */
  readonly ttlMs: number
  readonly startedAt: number
  endedAt: number
  /** The fault kinds the run could draw (a chaos run): the coverage shows those it did not draw too. */
  readonly faultKinds?: readonly string[]
}

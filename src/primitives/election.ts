import { MAX_VALUE_BYTES, type Driver, type HolderSummary, type LockSpec } from '../core/driver.js'
import type { Duration } from '../core/duration.js'
import { BatonError, invalidArgument, leaseLost } from '../core/errors.js'
import type { Keeper } from '../core/keeper.js'
import type { Lease } from '../core/lease.js'
import { checkOptions, parseSignal, parseWait } from '../core/options.js'
import { publicOwner } from '../core/owner.js'

export interface ElectionOptions {
  /** The leader's lease: a leader whose client dies is replaced within it. Default '30s'. */
  ttl?: Duration
  /** Keep the leadership vacant this long after a leader's lease expired (not after a resign). Default 0. */
  lockDelay?: Duration
}

export interface CampaignOptions {
  /** What this candidate announces once it leads (an address, say): at most 4096 UTF-8 bytes. Default ''. */
  value?: string
  /** Aborting it stops campaigning with BatonError('ABORTED'); this candidate leaves the line. */
  signal?: AbortSignal
  /** How long to campaign: a duration; default until elected. LOCK_TIMEOUT when it runs out. */
  wait?: Duration
}

export interface ObserveOptions {
  /** Aborting it ends the iteration (the loop ends normally). */
  signal?: AbortSignal
}

/** Who leads now, as election.leader() shows it. */
export interface Leader {
  /** The value the leader announced (campaign's `value`, or its last proclaim). */
  value: string
  /** The fencing token of its term. */
  token: bigint
  /** When its term began, epoch ms by the store's clock, when the store keeps it. */
  since: number | undefined
  /** The leader's owner id (as inspect shows it). */
  holder: string
  /** Who the leader is (JSON text: host, pid, client), when the store keeps it. */
  description?: string
}

/** One step of election.observe(): the new leader's value and term, or null while nobody leads. */
export type LeaderChange = { value: string; token: bigint } | null

/**
 * Leader election on one name, built on the fair mutex: a campaign is a fair
 * acquire (candidates are elected in the order they campaigned), the
 * leadership is the lease (its fencing token orders terms, its signal aborts
 * on loss, the watchdog renews it), and resigning releases it, which hands
 * the name to the next candidate in the same store operation. The leader's
 * value lives beside the hold in the store (AcquireRequest.value), so
 * reading who leads and what it announced is one store read.
 */
export class Election {
  private readonly spec: LockSpec

  constructor(
    private readonly keeper: Keeper,
    spec: LockSpec,
    private readonly ttlMs: number,
  ) {
    this.spec = spec
  }

  get name(): string {
    return this.spec.name
  }

  private get driver(): Driver {
    return this.keeper.driver
  }

  /** Waits until this client leads (by default as long as it takes) and returns the Leadership. */
  async campaign(options?: CampaignOptions): Promise<Leadership> {
    const opts = checkOptions<CampaignOptions>(options, 'campaign()', ['value', 'signal', 'wait'])
    const value = checkValue(opts.value ?? '', 'campaign()')
    const signal = parseSignal(opts.signal)
    const waitMs = parseWait(opts.wait, Infinity)
    this.offered('campaign()')
    const lease = await this.keeper.take(this.spec, {
      ttlMs: this.ttlMs, waitMs, signal, autoExtend: true, reentrant: false, nullIfBusy: false, value,
    })
    return new Leadership(lease!, this.spec, this.driver, value)
  }

  /** Who leads now, with its value and term; null while nobody does. */
  async leader(): Promise<Leader | null> {
    this.keeper.checkOpen()
    const holder = leaderHold(await this.driver.inspect(this.spec.name))
    return holder ? leaderOf(holder) : null
  }

  /**
   * The leader as it changes: first the current one (or null), then every
   * change, in order (terms never go back). Waits for the store's notices
   * (Driver.observe), never polls: each notice is followed by one read of
   * the name, and only a real change (another term or another value) is
   * given out. Changes closer together than one read may be seen as their
   * last one. Ends when `signal` aborts or the client closes. A read the
   * store did not answer is tried again (250 ms, doubling up to 5 s); any
   * other failure (UNAUTHORIZED, FORBIDDEN…) ends it with that error.
   */
  observe(options?: ObserveOptions): AsyncIterable<LeaderChange> {
    const opts = checkOptions<ObserveOptions>(options, 'observe()', ['signal'])
    const signal = parseSignal(opts.signal)
    this.offered('observe()')
    return { [Symbol.asyncIterator]: () => new LeaderFeed(this.keeper, this.spec.name, signal) }
  }

  private offered(what: string): void {
    this.keeper.checkOpen()
    if (this.driver.electionRefusal !== undefined) throw invalidArgument(`${what}: ${this.driver.electionRefusal}`)
    if (!this.driver.proclaim || !this.driver.observe) {
      throw invalidArgument(`${what}: the ${this.driver.store} store offers no leader election (it can not keep the leader's value beside its hold and report changes)`)
    }
  }
}

/** This client's term as leader: a Lease with the value it announced. */
export class Leadership implements AsyncDisposable {
  private announced: string

  constructor(
    /** The hold behind the term (renewed by the watchdog until resigned or lost). */
    readonly lease: Lease,
    private readonly spec: LockSpec,
    private readonly driver: Driver,
    value: string,
  ) {
    this.announced = value
  }

  get name(): string { return this.lease.name }
  /** Fencing token of this term: strictly greater than every earlier term's. */
  get token(): bigint { return this.lease.token }
  /** Aborts (BatonError LEASE_LOST) as soon as the leadership is lost, before another can be elected. */
  get signal(): AbortSignal { return this.lease.signal }
  /** The value this leader announces now. */
  get value(): string { return this.announced }
  /** True until resigned or lost. */
  get held(): boolean { return this.lease.held }

  /**
   * Announces another value without giving up the term (same token, same
   * lease). Throws LEASE_LOST (and the signal aborts) if the store no longer
   * has the leadership, NOT_HOLDER after a resign.
   */
  async proclaim(value: string): Promise<void> {
    const checked = checkValue(value, 'proclaim()')
    if (!this.lease.held) {
      if (this.lease.signal.aborted) throw this.lease.signal.reason
      throw new BatonError('NOT_HOLDER', `the leadership of "${this.name}" was already resigned`, { lockName: this.name })
    }
    const ref = { ...this.spec, owner: this.lease.owner, token: this.lease.token }
    if (await this.driver.proclaim!(ref, checked)) {
      this.announced = checked
      return
    }
    // The store says it is gone: a renewal attempt makes the hold see it (its signal aborts).
    await this.lease.extend().catch(() => {})
    throw this.lease.signal.aborted ? this.lease.signal.reason : leaseLost(this.name, 'the store no longer has it')
  }

  /** Gives up the term: the next candidate in campaign order leads at once. Idempotent. */
  async resign(): Promise<void> {
    await this.lease.release()
  }

  /** The same as resign(). */
  release(): Promise<void> {
    return this.resign()
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.resign()
  }
}

function checkValue(value: unknown, what: string): string {
  if (typeof value !== 'string') throw invalidArgument(`${what}: "value" must be a string, got ${value === null ? 'null' : typeof value}`)
  if (value.includes('\0')) throw invalidArgument(`${what}: "value" must not contain a NUL character (stores keep it as text)`)
  const bytes = Buffer.byteLength(value)
  if (bytes > MAX_VALUE_BYTES) throw invalidArgument(`${what}: "value" is ${bytes} bytes; at most ${MAX_VALUE_BYTES} UTF-8 bytes are kept`)
  return value
}

/**
 * The leader among a name's holders: its one exclusive hold. Holds that share
 * the name (readers, permits) are nobody's leadership: naming one of them
 * would show a "leader" while others hold the name too.
 */
export function leaderHold(info: { readonly holders: readonly HolderSummary[] } | null | undefined): HolderSummary | undefined {
  const holder = info?.holders[0]
  return holder?.mode === 'exclusive' ? holder : undefined
}

function leaderOf(holder: HolderSummary): Leader {
  return {
    value: holder.value ?? '',
    token: holder.token,
    since: holder.since,
    holder: publicOwner(holder.owner),
    ...(holder.description !== undefined ? { description: holder.description } : {}),
  }
}

/**
 * One observer: store notices → re-reads, one at a time → changes, queued
 * in order. A re-read also runs at the leader's lease end, so a store whose
 * expiry is passive (Redis, PostgreSQL: a lease ends without any operation
 * that could notify) still reports a dead leader by the time it is gone.
 */
class LeaderFeed implements AsyncIterator<LeaderChange> {
  private readonly queue: LeaderChange[] = []
  private last: LeaderChange | undefined
  private reading = false
  private dirty = false
  private ended = false
  private failure: unknown
  private wake: (() => void) | undefined
  private readonly unobserve: () => void
  private expiryTimer: NodeJS.Timeout | undefined
  private readonly onStop: () => void
  /** Pause before reading again after a failed read (doubled each time, up to MAX_RETRY_MS). */
  private retryMs = FIRST_RETRY_MS / 2

  constructor(private readonly keeper: Keeper, private readonly name: string, private readonly signal: AbortSignal | undefined) {
    this.onStop = () => this.end()
    if (signal?.aborted || keeper.closed) {
      this.ended = true
      this.unobserve = () => {}
      return
    }
    signal?.addEventListener('abort', this.onStop, { once: true })
    // A close of the client ends the feed, as it ends a pending acquire.
    keeper.closeSignal.addEventListener('abort', this.onStop, { once: true })
    // Registered before the first read, so no change after that read goes unnoticed.
    this.unobserve = keeper.driver.observe!(name, () => this.refresh())
    this.refresh()
  }

  private refresh(): void {
    if (this.ended) return
    if (this.reading) {
      this.dirty = true
      return
    }
    this.reading = true
    this.dirty = false
    this.keeper.driver.inspect(this.name).then(
      (info) => {
        this.reading = false
        this.retryMs = FIRST_RETRY_MS / 2
        if (this.ended) return
        const holder = leaderHold(info)
        this.arm(holder?.expiresAt)
        const now: LeaderChange = holder ? { value: holder.value ?? '', token: holder.token } : null
        const last = this.last
        if (last === undefined || !same(last, now)) {
          // Terms never go back: a read that raced an older notice is not news.
          if (!(last && now && now.token < last.token)) {
            this.last = now
            this.queue.push(now)
            this.wake?.()
          }
        }
        if (this.dirty) this.refresh()
      },
      (error: unknown) => {
        this.reading = false
        if (this.ended) return
        // The store did not answer (a reset, a failover): read again soon, as
        // often as it takes; a change meanwhile is then seen. Anything else
        // (no right to read the name, a refusal) ends the iteration with it.
        if (error instanceof BatonError && error.retryable) {
          clearTimeout(this.expiryTimer)
          this.retryMs = Math.min(this.retryMs * 2, MAX_RETRY_MS)
          this.expiryTimer = setTimeout(() => this.refresh(), this.retryMs)
          this.expiryTimer.unref()
          return
        }
        this.failure = error
        this.end()
      },
    )
  }

  /** One more read just after the leader's lease end (by the store's clock, as inspect showed it). */
  private arm(expiresAt: number | undefined): void {
    clearTimeout(this.expiryTimer)
    if (expiresAt === undefined) return
    this.expiryTimer = setTimeout(() => this.refresh(), Math.max(0, expiresAt - Date.now()) + 50)
    this.expiryTimer.unref()
  }

  private end(): void {
    if (this.ended) return
    this.ended = true
    clearTimeout(this.expiryTimer)
    this.unobserve()
    this.signal?.removeEventListener('abort', this.onStop)
    this.keeper.closeSignal.removeEventListener('abort', this.onStop)
    this.wake?.()
  }

  async next(): Promise<IteratorResult<LeaderChange>> {
    for (;;) {
      if (this.queue.length > 0) return { value: this.queue.shift()!, done: false }
      if (this.ended) {
        if (this.failure !== undefined) {
          const error = this.failure
          this.failure = undefined
          throw error
        }
        return { value: undefined, done: true }
      }
      await new Promise<void>((resolve) => {
        this.wake = resolve
      })
      this.wake = undefined
    }
  }

  async return(): Promise<IteratorResult<LeaderChange>> {
    this.end()
    return { value: undefined, done: true }
  }
}

const FIRST_RETRY_MS = 250
const MAX_RETRY_MS = 5000

function same(a: LeaderChange, b: LeaderChange): boolean {
  if (a === null || b === null) return a === b
  return a.token === b.token && a.value === b.value
}

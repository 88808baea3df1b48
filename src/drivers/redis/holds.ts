import type { AcquireRequest, AcquireResult, ExtendResult, HoldRef, LockSpec } from '../../core/driver.js'
import { isBatonError } from '../../core/errors.js'
import { baseKey, listedKey } from './keys.js'
import { memberOf, noteOf, parseHolder, specOf } from './members.js'
import type { NameScripts } from './name-scripts.js'
import type { WakeChannels } from './wake-channels.js'

/**
 * The calls that grant, renew and end holds: acquire, extend, release,
 * downgrade, each one script and one round trip, and the ordering they need
 * from each other (an acquire waits for its owner's release on the way; a
 * give-back the connection dropped is sent again). The place to add what
 * must follow a grant or a renewal.
 */
export class Holds {
  /**
   * The fencing counter's clock floor is the store clock rounded down to
   * this many µs (acquire.lua ARGV[5]). 1 here; the Redlock driver sets
   * 1000 on its nodes so that their tokens agree in the common case.
   */
  tokenClockUnitUs = 1

  /**
   * Releases on their way, by owner and name. An acquire of the same owner
   * and name waits for it: the scripts run in the order they are sent, but
   * a call answered NOSCRIPT (SCRIPT FLUSH, a restart) runs again only after
   * the calls sent behind it, and an acquire that ran first would take the
   * releasing owner's own hold back (same owner: the same hold), which the
   * release then ends: a lease on a free name. Other owners' calls reordered
   * so cost at most a wrong "busy" (found by a hostile review: a lock
   * server's or a given owner's release then acquire in one turn).
   */
  private readonly releasing = new Map<string, Promise<unknown>>()

  /**
   * Give-backs (a release without a token: the core undoing an attempt it
   * reported failed, whose fate it does not know) that the connection could
   * not carry, by owner and name. Redis may have run the attempt before the
   * connection dropped; ioredis flushes a give-back queued meanwhile
   * (maxRetriesPerRequest), which left that attempt's hold for a fresh ttl,
   * nobody's. Each is sent again after the next reconnect, until answered.
   * An acquire of the same owner and name replaces it (its answer is the
   * owner's state from then on).
   */
  private readonly giveBacks = new Map<string, LockSpec & { owner: string }>()

  /** Short votes (redlock-vote.lua) not settled yet, by owner and name: see vote(). */
  private readonly voting = new Map<string, Promise<unknown>>()

  private closed = false

  constructor(
    private readonly scripts: NameScripts,
    private readonly channels: WakeChannels,
    private readonly keyPrefix: string,
    private readonly clientId: string,
    private readonly fenceTtlMs: number,
  ) {}

  /** Sends again the give-backs that failed for want of a connection (the command connection is ready again). */
  resendGiveBacks(): void {
    const pending = [...this.giveBacks.values()]
    this.giveBacks.clear()
    for (const hold of pending) this.release(hold).catch(() => {})
  }

  acquire(request: AcquireRequest): Promise<AcquireResult> {
    return sentOrRejected(() => this.acquireWith(request, this.acquireArgv(request)))
  }

  /**
   * acquire.lua's arguments for `request`. The Redlock driver makes them
   * once for all of its nodes (acquireWith), which share every input here.
   */
  acquireArgv(request: AcquireRequest): (string | number)[] {
    // Every attempt is the same script whether or not it is a retry: the
    // script itself recognises an owner that already holds or waits. What
    // only its slow path reads travels as one argument (acquire.lua).
    const slow = `${request.enqueue ? 1 : 0}|${Math.ceil(request.queueTtlMs)}|${this.fenceTtlMs}|${this.channels.channelFor(request.name)}`
    const argv: (string | number)[] = [
      baseKey(this.keyPrefix, request.name), request.owner, specOf(request), request.ttlMs, request.lockDelayMs,
      this.tokenClockUnitUs, slow,
    ]
    const note = noteOf(request.description, request.value)
    if (note !== undefined) argv.push(note)
    return argv
  }

  /**
   * redlock-vote.lua's arguments for `request` (a Redlock node's short vote,
   * acquire.lua deciding what it does not), or undefined where it never
   * applies: shared holds, a leader's value.
   */
  voteArgv(request: AcquireRequest): (string | number)[] | undefined {
    if ((request.mode !== 'exclusive' && request.mode !== 'write') || request.value !== undefined) return undefined
    return [
      baseKey(this.keyPrefix, request.name), `${request.owner}|${specOf(request)}`,
      `${request.lockDelayMs}|-|${Date.now()}|${request.description ?? ''}`, request.ttlMs + request.lockDelayMs,
      listedKey(this.keyPrefix), request.name,
    ]
  }

  /**
   * An attempt with its arguments made already (acquireArgv); never changes
   * `argv`. With `vote` (voteArgv), the short vote goes first and acquire.lua
   * only where it answers "not decided here".
   */
  acquireWith(request: AcquireRequest, argv: readonly (string | number)[], vote?: readonly (string | number)[]): Promise<AcquireResult> {
    if (this.giveBacks.size > 0) this.giveBacks.delete(`${request.owner}\0${request.name}`)
    const release = this.releasing.size > 0 ? this.releasing.get(`${request.owner}\0${request.name}`) : undefined
    const ready = this.channels.ready(request.name)
    // Nothing to wait for (the common case): sent now, without an async frame's promises.
    if (!release && ready === true) return vote ? this.vote(request, argv, vote) : this.attempt(request, argv)
    return (async () => {
      if (release) await release.catch(() => {})
      if (ready !== true) await ready
      return vote ? this.vote(request, argv, vote) : this.attempt(request, argv)
    })()
  }

  private attempt(request: AcquireRequest, argv: readonly (string | number)[]): Promise<AcquireResult> {
    return this.scripts.runArgv('acquire', request.name, argv, (answer) => acquireResult(answer, request.ttlMs))
  }

  /**
   * The short vote, then acquire.lua where it did not decide. Until it is
   * settled a release of the same owner and name waits for it (releaseWith):
   * acquire.lua goes out only when the vote's answer comes, and a release
   * sent meanwhile (a round decided without this node) must not run before
   * a grant it would then miss.
   */
  private vote(request: AcquireRequest, argv: readonly (string | number)[], vote: readonly (string | number)[]): Promise<AcquireResult> {
    const key = `${request.owner}\0${request.name}`
    const sent = this.scripts.runArgv('redlockVote', request.name, vote).then((answer) =>
      answer === null ? this.attempt(request, argv) : acquireResult(answer, request.ttlMs))
    this.voting.set(key, sent)
    const settle = (): void => {
      if (this.voting.get(key) === sent) this.voting.delete(key)
    }
    sent.then(settle, settle)
    return sent
  }

  async extend(holds: readonly HoldRef[], ttlMs: number): Promise<ExtendResult[]> {
    // Issued together: ioredis' auto-pipelining sends them in one write per node.
    const replies = await Promise.all(
      holds.map((hold) => this.scripts.runArgv('extend', hold.name, [baseKey(this.keyPrefix, hold.name), memberOf(hold), ttlMs, hold.lockDelayMs])),
    )
    return replies.map((ttl) => (Number(ttl) > 0 ? { status: 'extended', ttlMs: Number(ttl) } : { status: 'lost' }))
  }

  /**
   * `guess` (the Redlock driver): the hold's token is a guess; where it does
   * not match, the owner's hold is ended whatever its token (release.lua's
   * ARGV[5]). A hold known by its token is released without it, as always.
   */
  release(hold: HoldRef | (LockSpec & { owner: string }), guess = false): Promise<boolean> {
    return sentOrRejected(() => this.releaseWith(hold, this.releaseArgv(hold, guess)))
  }

  /** release.lua's arguments for `hold` (made once for all its nodes by the Redlock driver, as acquireArgv). */
  releaseArgv(hold: HoldRef | (LockSpec & { owner: string }), guess: boolean): (string | number)[] {
    const member = 'token' in hold ? memberOf(hold) : ''
    // Another client's hold (a lock server releasing a lease another server granted): its client is told.
    const foreign = hold.owner.startsWith(`${this.clientId}.`) ? 0 : 1
    const argv: (string | number)[] = [
      baseKey(this.keyPrefix, hold.name), member, hold.owner, this.fenceTtlMs, this.channels.channelFor(hold.name),
      guess && member !== '' ? 1 : 0, this.tokenClockUnitUs, foreign,
    ]
    // Where the script's fast path may apply, the counter it leaves (release.lua ARGV[8]).
    if ('token' in hold && foreign === 0 && hold.lockDelayMs === 0 && (hold.mode === 'exclusive' || hold.mode === 'write')) argv.push(`${hold.token}|-`)
    return argv
  }

  /**
   * redlock-unvote.lua's arguments for `hold` (a Redlock node's short
   * release, release.lua deciding what it does not), or undefined where it
   * never applies: as release.lua's fast path (ARGV[8]).
   */
  unvoteArgv(hold: HoldRef | (LockSpec & { owner: string })): (string | number)[] | undefined {
    if (!('token' in hold) || hold.lockDelayMs !== 0 || (hold.mode !== 'exclusive' && hold.mode !== 'write')) return undefined
    if (!hold.owner.startsWith(`${this.clientId}.`)) return undefined
    return [baseKey(this.keyPrefix, hold.name), memberOf(hold), `${hold.token}|-`, this.fenceTtlMs, listedKey(this.keyPrefix), hold.name]
  }

  /**
   * A release with its arguments made already (releaseArgv); never changes
   * `argv`. With `unvote` (unvoteArgv), the short release goes first and
   * release.lua only where it answers "not decided here".
   */
  releaseWith(hold: HoldRef | (LockSpec & { owner: string }), argv: readonly (string | number)[], unvote?: readonly (string | number)[]): Promise<boolean> {
    const key = `${hold.owner}\0${hold.name}`
    this.giveBacks.delete(key)
    const send = (): Promise<unknown> => (unvote
      ? this.scripts.runArgv('redlockUnvote', hold.name, unvote).then((answer) => answer ?? this.scripts.runArgv('release', hold.name, argv))
      : this.scripts.runArgv('release', hold.name, argv))
    // After a short vote of this owner that may still send acquire.lua (vote()).
    const voting = this.voting.size > 0 ? this.voting.get(key) : undefined
    const sent = voting ? voting.then(send, send) : send()
    this.releasing.set(key, sent)
    const settle = (): void => {
      if (this.releasing.get(key) === sent) this.releasing.delete(key)
    }
    return sent.then((answer) => {
      settle()
      return Number(answer) === 1
    }, (error: unknown) => {
      settle()
      if (!('token' in hold) && isBatonError(error, 'BACKEND_UNAVAILABLE') && !this.closed) this.giveBacks.set(key, hold)
      throw error
    })
  }

  async downgrade(hold: HoldRef): Promise<boolean> {
    const read: HoldRef = { ...hold, mode: 'read' }
    return Number(await this.scripts.call('downgrade', hold.name, [memberOf(hold), memberOf(read), this.channels.channelFor(hold.name), this.fenceTtlMs])) === 1
  }

  /** The driver closes: give-backs are dropped, and none is kept from now on. */
  close(): void {
    this.closed = true
    this.giveBacks.clear()
  }
}

type AcquireReply = string | [number, number | string, string | null, number | null]

/** acquire.lua's answer as an AcquireResult; the fast path answers the token alone, for the ttl asked. */
function acquireResult(answer: unknown, ttlMs: number): AcquireResult {
  const reply = answer as AcquireReply
  if (typeof reply === 'string') return { status: 'granted', token: BigInt(reply), ttlMs }
  const [status] = reply
  if (status === 1) return { status: 'granted', token: BigInt(reply[1]), ttlMs: Number(reply[2]) }
  if (status === -1) return { status: 'conflict', detail: String(reply[1]) }
  const holder = reply[2] ? parseHolder(reply[2], Number(reply[3])) : undefined
  return { status: 'busy', retryAfterMs: Number(reply[1]), ...(holder ? { holder } : {}) }
}

/** `send()`, a failure on the way out answered as a rejection (as from an async function). */
function sentOrRejected<T>(send: () => Promise<T>): Promise<T> {
  try {
    return send()
  } catch (error) {
    return Promise.reject(error)
  }
}

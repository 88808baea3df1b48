import type { AcquireRequest, ExtendResult, HoldRef, LockSpec } from '../../core/driver.js'
import { monotonicNow } from '../../core/clock.js'
import type { RedisDriver } from '../redis/index.js'
import { memberOf } from '../redis/members.js'
import { answeredAll, driftMs, validityMs, type Answer, type NodeCall } from './quorum.js'
import type { Line } from './line.js'
import type { NodeSet } from './node-set.js'

/**
 * This client's Redlock leases and the majority operations on them: taking
 * a granted lease (its token and the raise of lower counters), late grants,
 * extend, downgrade, release and giving back a lost round. Separate from the
 * attempt, which decides whether a round won; this decides what each node
 * keeps of a lease afterwards.
 */

/** What this client keeps about one of its holds: each node's own token (a node's hold member carries it). */
export interface HoldState {
  readonly tokens: (bigint | undefined)[]
  /**
   * Per node, the attempt sent there while its answer has not come (the
   * majority was decided without it); a downgrade waits for it.
   */
  readonly pending: (Promise<unknown> | undefined)[]
  /** The lease's token, once granted. */
  token?: bigint
  /**
   * A write hold downgraded to read: its nodes are addressed with the write
   * member, which the node scripts also match to the read hold a downgrade
   * made of it, so a node whose downgrade was late or lost is ended too.
   */
  downgraded?: boolean
  /** Released by its owner: every node is sent its release, a late grant included (release()). */
  released?: boolean
  /** Per node, raised to the lease's token in place (raiseTokens): its token there is the lease's, by guess. */
  raised?: boolean[]
}

export class Holds {
  private readonly byOwner = new Map<string, HoldState>()

  constructor(private readonly nodes: NodeSet, private readonly line: Line) {}

  /** A round's state before any node answered. */
  fresh(): HoldState {
    return { tokens: new Array(this.nodes.size).fill(undefined), pending: new Array(this.nodes.size).fill(undefined) }
  }

  has(owner: string): boolean {
    return this.byOwner.has(owner)
  }

  /** The lease's token, for inspect (this client knows its own leases' tokens). */
  tokenOf(owner: string): bigint | undefined {
    return this.byOwner.get(owner)?.token
  }

  /** The hold ended (a node's lost notice): true if this client had it. */
  drop(owner: string): boolean {
    return this.byOwner.delete(owner)
  }

  /**
   * Node `i` granted `token` to a round. A grant after the lease was taken
   * on a majority (a straggler) joins the hold when its token is not above
   * the lease's, and is given back at once otherwise, so every node's hold
   * of this lease carries a token ≤ the lease's and inspect() reads the
   * lease's token as their highest. It is given back too when the lease is
   * no longer held (lost to a forced release or another client's release,
   * which reached this node before the grant did): else the node keeps it
   * for the whole ttl, and inspect and forceRelease see a hold nobody has.
   */
  noteGrant(request: AcquireRequest, state: HoldState, i: number, driver: RedisDriver, token: bigint): void {
    const gone = state.token !== undefined && !state.released && this.byOwner.get(request.owner) !== state
    if (state.token !== undefined && (gone || token > state.token)) driver.release({ ...withoutToken(request), token }).catch(() => {})
    else {
      state.tokens[i] = token
      // Raised too, so that the nodes' counters agree again and the next votes draw equal tokens.
      if (state.token !== undefined && token < state.token) this.raise(request, state, i, driver, state.token)
    }
  }

  /** The round won: the lease takes the highest token of its grants, and lower counters are raised to it. */
  take(request: AcquireRequest, state: HoldState): bigint {
    let token = 0n
    for (const t of state.tokens) if (t !== undefined && t > token) token = t
    state.token = token
    this.raiseTokens(request, state, token)
    this.byOwner.set(request.owner, state)
    return token
  }

  /**
   * Raises the counters of granting nodes that drew a lower token than the
   * lease's (see the comment atop index.ts). An exclusive hold takes the
   * lease's token in place (raise-token.lua), so from now on the lease is
   * addressed there by its own token, by guess (a raise that did not land
   * leaves the old token: the release then ends the owner's hold whatever
   * its token).
   */
  private raiseTokens(request: AcquireRequest, state: HoldState, token: bigint): void {
    state.tokens.forEach((t, i) => {
      const driver = this.nodes.all[i]!.driver
      if (t !== undefined && t < token && driver) this.raise(request, state, i, driver, token)
    })
  }

  private raise(request: AcquireRequest, state: HoldState, i: number, driver: RedisDriver, token: bigint): void {
    // A shared hold (a reader) keeps its token: only the hold key's counter is raised.
    if (request.mode !== 'exclusive' && request.mode !== 'write') {
      driver.call('raiseToken', request.name, [token.toString(), driver.fenceTtl]).catch(() => {})
      return
    }
    driver.call('raiseToken', request.name, [token.toString(), driver.fenceTtl, request.owner]).catch(() => {})
    state.tokens[i] = token
    ;(state.raised ??= [])[i] = true
  }

  async extend(holds: readonly HoldRef[], ttlMs: number): Promise<ExtendResult[]> {
    const started = monotonicNow()
    const states = holds.map((hold) => this.byOwner.get(hold.owner))
    const counted = this.nodes.counting()
    const calls = this.nodes.all.map((node, i): NodeCall<ExtendResult[]> => {
      const driver = node.driver
      if (!driver) return node.unreachable()
      // Only holds this node granted (with its own token) can be extended there.
      const here = holds.flatMap((hold, h) => {
        const token = states[h]?.tokens[i]
        return token === undefined ? [] : [{ ...asSent(hold, states[h]), token }]
      })
      if (here.length === 0) return () => Promise.resolve([])
      return () => driver.extend(here, ttlMs).then((results) => {
        // Back in input order, with "lost" where this node had nothing.
        let next = 0
        return holds.map((_, h) => (states[h]?.tokens[i] === undefined ? { status: 'lost' as const } : results[next++]!))
      })
    })
    const answers = await this.nodes.gather(calls, (partial) => answeredAll(partial) || this.extendDecided(partial, counted, holds.length))
    const drift = driftMs(ttlMs, this.nodes.settings.driftFactor, this.nodes.settings.driftMs)
    const validity = validityMs(ttlMs, monotonicNow() - started, drift)
    let unsure = false
    const results = holds.map((hold, h): ExtendResult => {
      if (!states[h]) return { status: 'lost' }
      let extended = 0
      let gone = 0
      answers.forEach((a, i) => {
        if (a.kind !== 'answered') return
        if (a.value[h]?.status === 'extended') {
          if (counted[i]) extended += 1
        } else gone += 1
      })
      if (extended >= this.nodes.majority && validity > 0) return { status: 'extended', ttlMs: ttlMs - drift }
      if (gone > this.nodes.size - this.nodes.majority) {
        this.byOwner.delete(hold.owner)
        return { status: 'lost' }
      }
      unsure = true
      return { status: 'lost' }
    })
    if (unsure) {
      // Not enough nodes answered: a transport failure for the watchdog to
      // retry until the lease's deadline, not a verdict.
      throw this.nodes.quorumError(holds[0]!.name, answers, counted,
        `could not extend ${holds.length === 1 ? `"${holds[0]!.name}"` : `${holds.length} holds`} on a majority of the redlock nodes in time`)
    }
    return results
  }

  private extendDecided(partial: readonly (Answer<ExtendResult[]> | undefined)[], counted: boolean[], count: number): boolean {
    for (let h = 0; h < count; h++) {
      let yes = 0
      partial.forEach((a, i) => {
        if (counted[i] && a?.kind === 'answered' && a.value[h]?.status === 'extended') yes += 1
      })
      if (yes < this.nodes.majority) return false
    }
    return true
  }

  /** The owner lets go: every node is released, and the line left when `inLine`. */
  async release(hold: HoldRef | (LockSpec & { readonly owner: string }), inLine: boolean): Promise<boolean> {
    const state = this.byOwner.get(hold.owner)
    if (state) state.released = true
    this.byOwner.delete(hold.owner)
    return this.releaseEverywhere(asSent(hold, state), state, true, inLine)
  }

  /**
   * A majority operation, like extend: every node that granted the write
   * hold turns it into a read hold with the same token and lease end (the
   * single-node downgrade script), and once a majority did, the readers
   * waiting at the head of the line are woken. Safe while it is under way:
   * each node keeps the hold (write or read) throughout, so no writer can
   * reach a majority; readers admitted on nodes already downgraded hold
   * beside a holder that has stopped writing (the core downgrades only when
   * the last write handle is gone).
   */
  async downgrade(hold: HoldRef): Promise<boolean> {
    const state = this.byOwner.get(hold.owner)
    if (!state) return false
    const counted = this.nodes.counting()
    const lineNode = this.nodes.lineNode()
    const calls = this.nodes.all.map((node, i): NodeCall<boolean> => {
      const driver = node.driver
      if (!driver) return node.unreachable()
      const send = (): Promise<boolean> => {
        const token = state.tokens[i]
        if (token === undefined) return Promise.resolve(false)
        const done = driver.downgrade({ ...hold, mode: 'write', token })
        // After the downgrade on the same connection: readers first in line may join now.
        if (node === lineNode) this.line.wake(driver, hold.name).catch(() => {})
        return done
      }
      // A node whose answer to the attempt is still on its way: by its token, once known.
      const pending = state.pending[i]
      return pending ? () => pending.then(send, send) : send
    })
    const answers = await this.nodes.gather(calls, (partial) => {
      let yes = 0
      partial.forEach((a, i) => { if (counted[i] && a?.kind === 'answered' && a.value) yes += 1 })
      return yes >= this.nodes.majority || answeredAll(partial)
    })
    // From now on the nodes are addressed with the write member (see HoldState).
    state.downgraded = true
    let yes = 0
    let gone = 0
    answers.forEach((a, i) => {
      if (a.kind !== 'answered') return
      if (a.value) yes += counted[i] ? 1 : 0
      else gone += 1
    })
    if (yes >= this.nodes.majority) return true
    if (gone > this.nodes.size - this.nodes.majority) {
      this.byOwner.delete(hold.owner)
      return false
    }
    throw this.nodes.quorumError(hold.name, answers, counted, `could not downgrade "${hold.name}" on a majority of the redlock nodes in time`)
  }

  /**
   * Releases `owner` on every node (by its token there when known, else by
   * owner), then wakes the head of the line on the line node, after the
   * release on the same connection. A node whose answer to the granted
   * attempt has not come yet most likely drew the lease's own token (the
   * nodes' counters agree in the common case, see the comment atop index.ts):
   * it is released by that token, and by owner where the token does not match
   * (the scripts' fallback), so the release is sent at once, ahead of
   * anything else this client sends that node, and usually takes the
   * scripts' short path (a release by owner runs the whole script).
   */
  async releaseEverywhere(
    spec: LockSpec & { readonly owner: string }, state: HoldState | undefined, wake: boolean, leave: boolean,
  ): Promise<boolean> {
    const lineNode = this.nodes.lineNode()
    const bare = withoutToken(spec)
    // The nodes' tokens agree in the common case: one hold object for all of them.
    let lastHold: HoldRef | undefined
    const holdOf = (token: bigint): HoldRef => (lastHold?.token === token ? lastHold : (lastHold = { ...bare, token }))
    // And one set of script arguments for the nodes that release the same hold the same way.
    // An exclusive hold without lock delay goes by the short release first (redlock-unvote.lua).
    let last: {
      readonly target: object; readonly guess: boolean; readonly argv: (string | number)[]; readonly unvote: (string | number)[] | undefined
    } | undefined
    const release = (driver: RedisDriver, target: LockSpec & { readonly owner: string }, guess: boolean): Promise<boolean> => {
      if (last?.target !== target || last.guess !== guess) {
        last = { target, guess, argv: driver.releaseArgv(target, guess), unvote: driver.unvoteArgv(target) }
      }
      return driver.releaseWith(target, last.argv, last.unvote)
    }
    const calls = this.nodes.all.map((node, i): NodeCall<boolean> => {
      const driver = node.driver
      if (!driver) return node.unreachable()
      return () => {
        const known = state?.tokens[i]
        const token = known ?? state?.token
        const guess = known === undefined || state?.raised?.[i] === true
        const hold = token === undefined ? undefined : holdOf(token)
        if (node !== lineNode) return release(driver, hold ?? bare, guess)
        if (leave) this.line.leave(driver, spec).catch(() => {})
        // The line node releases and wakes the head in one call, and only
        // wakes when someone waits (the script looks at the line).
        if (wake && hold) return this.line.release(driver, spec.name, memberOf(hold), guess)
        const done = driver.release(hold ?? bare)
        if (wake) this.line.wake(driver, spec.name).catch(() => {})
        return done
      }
    })
    // Done once every node answered (or the vote timeout passed): a majority
    // is all a next holder needs, but a caller that inspects right after its
    // release must not find a slower node still holding (a vote that came
    // late is released there by owner), and a down node answers at once.
    // Done at a majority instead (as node-redlock) was ~20% more pairs/s
    // and failed the conformance suite under load: another client's
    // inspect right after the release saw the slowest node's hold.
    // (Ordering on the connection covers only this client's next commands.)
    const answers = await this.nodes.gather(calls, answeredAll)
    return answers.some((a) => a.kind === 'answered' && a.value)
  }
}

/** A hold as sent to the nodes: a downgraded hold keeps its write member there (see HoldState). */
function asSent<T extends LockSpec>(hold: T, state: HoldState | undefined): T {
  return state?.downgraded && hold.mode === 'read' ? { ...hold, mode: 'write' } : hold
}

function withoutToken(spec: LockSpec & { readonly owner: string }): LockSpec & { owner: string } {
  return {
    name: spec.name, kind: spec.kind, mode: spec.mode, fair: spec.fair, permits: spec.permits,
    lockDelayMs: spec.lockDelayMs, owner: spec.owner,
  }
}

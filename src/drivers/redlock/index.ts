import type {
  AcquireRequest, AcquireResult, Capabilities, Driver, DriverFactory, DriverOptions, ExtendResult,
  HoldRef, HolderSummary, ListPage, LockInfo, LockSpec, NodeView, Wake,
} from '../../core/driver.js'
import { inspectInOrder, limitOf, namesOfPage } from '../../core/list.js'
import { monotonicNow } from '../../core/clock.js'
import { BatonError } from '../../core/errors.js'
import type { StoreUrl } from '../../core/url.js'
import { createRedisDriver, memberOf, type RedisDriver } from '../redis/index.js'
import { refuseReplicaOptions } from '../redis/replicas.js'
import { wakeChannelPrefix } from '../redis/keys.js'
import { answeredAll, driftMs, describeFailure, gather, majorityOf, validityMs, type Answer, type NodeCall } from './quorum.js'
import { Line, type LinePlace, type LineSpot } from './line.js'
import { RedlockNode } from './node.js'
import { parseRedlockUrl, type RedlockSettings } from './settings.js'

/**
 * Redlock over N independent Redis masters. Each node runs the single-node
 * Redis driver (its scripts and connection code, src/drivers/redis/); this
 * driver sends every operation to all nodes at once and counts the votes.
 *
 * Waiting, without split votes: the nodes never hand a name over by
 * themselves (attempts never join a node's own line: N lines need not agree,
 * and N hand-overs to N different heads would leave nobody with a majority).
 * Instead one line decides the order: it lives on the *line node*, the first
 * node of the URL that answers (scripts/redlock-line.lua). A release frees the
 * name on every node and, on the line node in the same script, wakes the
 * head of the line only (and only when the line is not empty); the head asks every node and, the name being free, gets them all.
 * Waiters behind the head are not woken and send nothing but a refresh of
 * their line entry every ttl/3, so a hand-over costs the same whatever the
 * number of waiters.
 *
 * A split vote (nobody reached a majority: a newcomer barged in while the head
 * was asking, or the line node changed during a failure) is resolved without
 * waiting for a ttl: every loser releases its partial grants at once (and the
 * release wakes the head of the line), then only the line's head retries at
 * once; everyone else waits in line behind it for a wake-up, and a contender
 * with no line entry (the line node unreachable) backs off by a random delay.
 *
 * Fencing tokens: each node's grant draws a token from that node's counter,
 * one above its last and never below the node's clock floored to whole
 * milliseconds, in µs (redis/scripts/token.lua; acquire.lua's ARGV[5], set
 * by RedlockNode; redis:// floors by the µs). The lease takes the highest
 * token of its grants, and every granting node whose counter is lower is
 * raised to it at once (scripts/raise-token.lua, sent before anything else
 * this client sends that node, so before the hold there can end). Any two
 * majorities share a node; on that node the later majority's grant comes
 * after the earlier hold ended, so after the raise, and its counter, hence
 * the later token, is larger. Limits: a majority must keep its data (a node
 * restarted empty is kept out of majorities by the restart guard until every
 * lease it may have held ran out, but its counter restarts from the clock
 * floor, which only helps where the nodes' clocks agree); a raise delayed past
 * the ttl by the network; and bounded state (`?fenceTtl=`) drops idle
 * counters, leaving the clock floor as with a single Redis (it holds while a
 * name gets fewer than 1,000 grants in one ms: the µs floor's rate bound).
 * Why the ms floor: after a raise all granting nodes' counters are equal, so
 * the next grants draw equal tokens (counter + 1) and need no raise; with
 * a µs floor each node's token was its own clock's µs after any pause of a
 * µs or more, so nearly every grant sent N − 1 raises. Now the nodes
 * disagree only when the floor moved past the counter between grants and
 * the nodes' clocks (or the moments the nodes ran the attempt) fall in
 * different ms; the raise then still restores the argument above.
 *
 * Read-write locks: a reader is a shared hold on each node, a writer an
 * exclusive one, taken by the single-node scripts, which never let the two
 * coexist on one node. Any reader majority and any writer majority share a
 * node, so at any instant at most one of them holds there: the same
 * argument as two writers (two mutex holders). Readers beside readers are
 * fine. Fencing: a writer's token is above every hold before it (reader or
 * writer, same argument as the mutex: the shared node's hold ended first);
 * a reader's is above every writer before it; readers holding at once are
 * not ordered among themselves (as they need not be).
 * Writer starvation is a liveness matter, decided on the line node alone: a
 * writer that has to wait joins the line; every reader asks the line in the
 * same round trip as its attempt and yields (gives back what it got and
 * joins the line) while a writer waits ahead of it, so once a writer is in
 * line, new readers queue behind it and the readers holding drain. The last
 * of them to release on the line node wakes the writer (a writer head is
 * not woken while readers still hold there); the writer's release wakes the
 * readers at the head of the line together. If the line node is down or
 * changes, readers may barge for a while: that delays a writer, never lets
 * it overlap a reader. Downgrade: see downgrade(). The semaphore stays
 * refused (REFUSED: majorities of permits need not share a full node).
 */

const CAPABILITIES: Capabilities = {
  fair: true, rwlock: true, semaphore: false, lockDelay: true, handoff: false, durableTokens: false,
}

/** Why a kind other than mutex is refused (INVALID_ARGUMENT), for the user and the README. */
const REFUSED: Partial<Record<LockSpec['kind'], string>> = {
  semaphore:
    'a semaphore can not be made safe over Redlock: with 2 permits and 3 nodes, holders granted on nodes {1,2}, {2,3} and ' +
    '{1,3} each have a majority while no node has more than 2, so 3 hold at once; use redis:// or a consensus store (etcd, ZooKeeper)',
}

/**
 * Why leader election is refused (Driver.electionRefusal). Its lock part
 * would work (a fair Redlock mutex), but the leader's value would live on
 * independent nodes: a proclaim that reaches only some of them (one down or
 * slow) leaves them disagreeing, so readers that ask different majorities
 * see the new value and then the old one again, and an observer could not
 * keep changes in order. Said once here, for the user and the README.
 */
const ELECTION_REFUSAL =
  'leader election is refused on redlock://: the leader\'s value would live on independent nodes, and a proclaim that reaches only ' +
  'some of them lets readers of different majorities see the new value, then the old one again (no order for observe()); ' +
  'use redis://, a consensus store (etcd, ZooKeeper) or PostgreSQL'

/** One watched owner: its wake-ups from every node, and how to stop them. */
interface Route {
  readonly name: string
  readonly onWake: (wake: Wake) => void
  readonly fromNode: (wake: Wake) => void
  readonly unwatch: (() => void)[]
}

/** What this client keeps about one of its holds: each node's own token (a node's hold member carries it). */
interface HoldState {
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
}

export class RedlockDriver implements Driver {
  readonly store = 'redlock'
  readonly capabilities = CAPABILITIES
  readonly electionRefusal = ELECTION_REFUSAL
  private readonly majority: number
  private readonly holds = new Map<string, HoldState>()
  private readonly spots = new Map<string, LineSpot>()
  private readonly routes = new Map<string, Route>()
  private largestTtlMs = 0
  /** Names with a line lately (monotonic ms until which to join the line first). */
  private readonly lineSeen = new Map<string, number>()
  private readonly line: Line

  constructor(
    private readonly nodes: readonly RedlockNode[],
    private readonly settings: RedlockSettings,
    keyPrefix: string,
  ) {
    this.majority = majorityOf(nodes.length)
    this.line = new Line(wakeChannelPrefix(keyPrefix))
    for (const node of nodes) node.onConnected = (driver) => this.adopt(driver)
  }

  async acquire(request: AcquireRequest): Promise<AcquireResult> {
    const refusal = request.value !== undefined ? ELECTION_REFUSAL : REFUSED[request.kind]
    if (refusal) return { status: 'conflict', detail: refusal }
    if (request.ttlMs > this.largestTtlMs) this.largestTtlMs = request.ttlMs
    const spot = this.spots.get(request.owner)
    // Waiters behind the head, and newcomers while this client saw a line
    // lately, ask the line first (one command) and leave the nodes alone
    // unless they are first and the name is free.
    const behind = spot ? !spot.woken && spot.rank > 0 : request.enqueue && this.contended(request.name)
    if (behind) {
      const place = await this.placeInLine(request, true)
      if (place && !(place.rank === 0 && place.free)) return this.busy(request, undefined, place)
    }
    if (spot) spot.woken = false
    // A round lost to slow answers (not to refusals or dead connections) is
    // tried again a few times at once, by a random small delay: on a busy
    // machine a node can miss a short timeout now and then, and that alone
    // should not fail an acquire.
    for (let round = 1; ; round++) {
      try {
        return await this.attempt(request)
      } catch (error) {
        if (round >= SLOW_ROUNDS || !(error instanceof SlowQuorum)) throw unwrapSlow(error)
        await new Promise((resolve) => setTimeout(resolve, 2 + Math.random() * 10 * round))
      }
    }
  }

  /** One Redlock round: ask every node, count, keep it or give everything back. */
  private async attempt(request: AcquireRequest): Promise<AcquireResult> {
    const started = monotonicNow()
    const ttl = request.ttlMs
    const nodeRequest: AcquireRequest = { ...request, enqueue: false, queueTtlMs: 0 }
    const state: HoldState = { tokens: new Array(this.nodes.length).fill(undefined), pending: new Array(this.nodes.length).fill(undefined) }
    const counted = this.countingNodes()
    // Fair: who waits, asked on the line node in the same round trip; a
    // majority with others ahead in line is not taken (they were woken for
    // it). Readers ask too, fair or not: a reader lets a writer waiting ahead
    // of it go first (no writer starvation; see the class comment). Not
    // fair: newcomers may barge, as with one Redis; while this client saw a
    // line lately its newcomers join it first (acquire()), and a barger that
    // splits the vote with the head goes behind it.
    const lineNode = this.lineNode()
    const peek = lineNode && (request.fair || request.mode === 'read') ? this.line.place(lineNode.driver!, request, false).catch(() => undefined) : undefined
    const calls = this.nodes.map((node, i): NodeCall<AcquireResult> => {
      const driver = node.driver
      if (!driver) return node.unreachable()
      const epoch = node.guard.epoch
      return () => (state.pending[i] = driver.acquire(nodeRequest).then((result) => {
        state.pending[i] = undefined
        // Judged per answer, not once per round: a node that restarted while
        // this request waited (re-sent on the new connection) does not vote.
        counted[i] = counted[i]! && node.guard.counts(epoch, this.largestTtlMs)
        if (result.status !== 'granted') return result
        // A grant after the lease was taken on a majority (a straggler)
        // joins the hold when its token is not above the lease's, and is
        // given back at once otherwise, so every node's hold of this lease
        // carries a token ≤ the lease's and inspect() reads the lease's
        // token as their highest. It is given back too when the lease is
        // no longer held (lost to a forced release or another client's
        // release, which reached this node before the grant did): else the
        // node keeps it for the whole ttl, and inspect and forceRelease see a
        // hold nobody has.
        const gone = state.token !== undefined && !state.released && this.holds.get(request.owner) !== state
        if (state.token !== undefined && (gone || result.token > state.token)) driver.release({ ...withoutToken(request), token: result.token }).catch(() => {})
        else state.tokens[i] = result.token
        return result
      }, (error: unknown) => {
        state.pending[i] = undefined
        throw error
      }))
    })
    const answers = await gather(calls, this.settings.timeoutMs, (partial) => this.decided(partial, counted))
    const elapsed = monotonicNow() - started
    const drift = driftMs(ttl, this.settings.driftFactor, this.settings.driftMs)
    let granted = 0
    for (let i = 0; i < answers.length; i++) if (counted[i] && isGranted(answers[i]!)) granted += 1
    const validity = validityMs(ttl, elapsed, drift)
    const line = await peek
    if (line && line.length > (this.spots.has(request.owner) ? 1 : 0)) this.sawLine(request.name)
    const yields = line !== undefined && line.rank > 0

    if (granted >= this.majority && validity > 0 && !yields) {
      let token = 0n
      for (const t of state.tokens) if (t !== undefined && t > token) token = t
      state.token = token
      this.raiseTokens(request.name, state.tokens, token)
      this.holds.set(request.owner, state)
      if (this.spots.delete(request.owner)) this.leaveLine(request)
      // The core counts this from when it sent the attempt (no later than
      // `started`), so right now the lease shows ttl − elapsed − drift: the
      // Redlock validity, and it keeps following it from there.
      return { status: 'granted', token, ttlMs: ttl - drift }
    }

    // Not ours: give back every node, also those that did not answer (a late
    // grant lands before this release on the same connection).
    // Wake the head of the line if this attempt may have held the line node
    // (the head reads "free" there); never when this owner is the head itself.
    const lineAnswer = lineNode ? answers[lineNode.index] : undefined
    const mayBlockHead = lineAnswer !== undefined && (isGranted(lineAnswer) || lineAnswer.kind !== 'answered')
    const isHead = this.spots.get(request.owner)?.rank === 0
    await this.releaseEverywhere(request, state, mayBlockHead && !isHead, false)
    const conflict = answers.find((a): a is { kind: 'answered'; value: Extract<AcquireResult, { status: 'conflict' }> } =>
      a.kind === 'answered' && a.value.status === 'conflict')
    if (conflict) return conflict.value
    const heard = answers.filter((a, i) => counted[i] && a.kind === 'answered').length
    if (granted >= this.majority && !yields) {
      throw this.quorumError(request.name, answers, counted,
        `a majority granted "${request.name}" but only after ${Math.round(elapsed)} ms, leaving no validity of the ${ttl} ms ttl ` +
        `(drift ${drift} ms); it was released everywhere. Raise "ttl", or look at the nodes' latency`)
    }
    if (heard < this.majority) {
      const slow = answers.some((a, i) => counted[i] && a.kind === 'timeout') && heard + answers.filter((a) => a.kind === 'timeout').length >= this.majority
      const error = this.quorumError(request.name, answers, counted,
        `only ${heard} of ${this.nodes.length} redlock nodes answered in time for "${request.name}" (a majority is ${this.majority})`)
      throw slow ? new SlowQuorum(error) : error
    }
    // Held by someone, others first in line, or a split vote: that is
    // contention, not an outage.
    return this.busy(request, answers, request.enqueue ? await this.placeInLine(request, true) : line)
  }

  /** This client saw others in line for `name` lately: newcomers join the line before asking the nodes. */
  private contended(name: string): boolean {
    const until = this.lineSeen.get(name)
    if (until === undefined) return false
    if (until > monotonicNow()) return true
    this.lineSeen.delete(name)
    return false
  }

  private sawLine(name: string): void {
    if (this.lineSeen.size >= 10_000) this.lineSeen.clear()
    this.lineSeen.set(name, monotonicNow() + CONTENDED_FOR_MS)
  }

  /**
   * The outcome is known: a majority of counted nodes granted (the lease is
   * taken without waiting for the others: on a loaded machine the slowest
   * of N processes sets the latency), or the attempt failed for sure and it
   * is known whether for contention or an outage.
   *
   * Fencing with a majority-resolved grant: the lease's token T is the
   * highest of the tokens that had arrived (at least the granting majority
   * M's), and the nodes of M below T are raised to T before anything else
   * this client sends them. A straggler's later grant is kept only with a
   * token ≤ T, else released at once; either way it is not needed for the
   * argument: any later majority shares a node with M, whose counter is ≥ T
   * by then, so it draws a token > T.
   */
  private decided(partial: readonly (Answer<AcquireResult> | undefined)[], counted: boolean[]): boolean {
    let yes = 0
    let heard = 0
    let open = 0
    partial.forEach((a, i) => {
      if (!counted[i]) return
      if (a === undefined) open += 1
      else if (a.kind === 'answered') {
        heard += 1
        if (isGranted(a)) yes += 1
      }
    })
    if (yes >= this.majority) return true
    if (yes + open >= this.majority) return false
    // Lost for sure; also known why: a majority answered (contention), or
    // too few can (an outage). Otherwise wait, so busy is never reported as down.
    return heard >= this.majority || heard + open < this.majority
  }

  /** A busy answer: when to try again, and who holds the name. */
  private busy(request: AcquireRequest, answers: Answer<AcquireResult>[] | undefined, place: LinePlace | undefined): AcquireResult {
    const busy = (answers ?? []).flatMap((a) => (a.kind === 'answered' && a.value.status === 'busy' ? [a.value] : []))
    const holder = mostCommonHolder(busy.map((b) => b.holder))
    // When a majority could be free again without a wake-up.
    const hints = busy.map((b) => b.retryAfterMs).sort((x, y) => x - y)
    let retryAfterMs = hints[Math.min(hints.length - 1, this.majority - 1)] ?? request.ttlMs
    const spot = this.spots.get(request.owner)
    if (spot && !(place && place.rank === 0 && place.free)) spot.stalls = 0
    if (place && place.rank === 0 && place.free) {
      // First in line and the name is free on the line node: the head goes
      // first. Other nodes may still hold it: a dying holder's keys were
      // set, so expire, a little later there (under load tens of ms later);
      // a releasing holder's release may not have reached them yet; a
      // barger may have split the vote. Retrying at once spun a head through
      // hundreds of attempts under load (the conformance herd test); waiting
      // for what those nodes said made a busy line crawl (a release on its
      // way reads as the whole remaining ttl). So: at once the first time (a
      // release on its way lands within a round trip), then after 1, 2, 4 …
      // ms for as many such attempts in a row, never later than the nodes
      // said. (Trusting a short report, ≤ 250 ms, as an expiry skew made a
      // hand-over wait out a short-ttl releasing holder's lease, and did
      // not lower the count under load.) A holder granted without the
      // line node (its vote there came late) looks like this for its whole
      // lease: it was a spin of hundreds of attempts, now ~log2(lease ms);
      // its release still wakes the head on the line node.
      const granted = (answers ?? []).filter((a) => a.kind === 'answered' && a.value.status === 'granted').length
      const lacking = Math.max(1, this.majority - granted)
      const stalls = spot ? (spot.stalls = (spot.stalls ?? 0) + 1) : 1
      const hint = hints.length === 0 ? 0 : hints[Math.min(hints.length, lacking) - 1]!
      retryAfterMs = Math.min(hint, stalls === 1 ? 0 : 2 ** Math.min(stalls - 2, 10))
    } else if (!place && request.enqueue) {
      // No line to wait in (the line node is unreachable): back off by a random delay.
      retryAfterMs = Math.min(retryAfterMs, 10 + Math.random() * 40)
    }
    return { status: 'busy', retryAfterMs, ...(holder ? { holder } : {}) }
  }

  /** Joins (or refreshes, or only peeks at) the line; undefined when the line node is unreachable. */
  private async placeInLine(request: AcquireRequest, join: boolean): Promise<LinePlace | undefined> {
    const node = this.lineNode()
    if (!node) return undefined
    try {
      const place = await this.line.place(node.driver!, request, join)
      if (place.length > 1) this.sawLine(request.name)
      if (join) {
        const spot = this.spots.get(request.owner)
        if (spot) spot.rank = place.rank
        else this.spots.set(request.owner, { rank: place.rank, woken: false, node: node.index })
      }
      return place
    } catch {
      return undefined
    }
  }

  private leaveLine(spec: LockSpec & { owner: string }): void {
    const node = this.lineNode()
    if (node) this.line.leave(node.driver!, spec).catch(() => {})
  }

  async extend(holds: readonly HoldRef[], ttlMs: number): Promise<ExtendResult[]> {
    const started = monotonicNow()
    const states = holds.map((hold) => this.holds.get(hold.owner))
    const counted = this.countingNodes()
    const calls = this.nodes.map((node, i): NodeCall<ExtendResult[]> => {
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
    const answers = await gather(calls, this.settings.timeoutMs, (partial) => answeredAll(partial) || this.extendDecided(partial, counted, holds.length))
    const drift = driftMs(ttlMs, this.settings.driftFactor, this.settings.driftMs)
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
      if (extended >= this.majority && validity > 0) return { status: 'extended', ttlMs: ttlMs - drift }
      if (gone > this.nodes.length - this.majority) {
        this.holds.delete(hold.owner)
        return { status: 'lost' }
      }
      unsure = true
      return { status: 'lost' }
    })
    if (unsure) {
      // Not enough nodes answered: a transport failure for the watchdog to
      // retry until the lease's deadline, not a verdict.
      throw this.quorumError(holds[0]!.name, answers, counted,
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
      if (yes < this.majority) return false
    }
    return true
  }

  async release(hold: HoldRef | (LockSpec & { readonly owner: string })): Promise<boolean> {
    const state = this.holds.get(hold.owner)
    if (state) state.released = true
    this.holds.delete(hold.owner)
    const inLine = this.spots.delete(hold.owner)
    const released = await this.releaseEverywhere(asSent(hold, state), state, true, inLine)
    return released
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
    const state = this.holds.get(hold.owner)
    if (!state) return false
    const counted = this.countingNodes()
    const lineNode = this.lineNode()
    const calls = this.nodes.map((node, i): NodeCall<boolean> => {
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
    const answers = await gather(calls, this.settings.timeoutMs, (partial) => {
      let yes = 0
      partial.forEach((a, i) => { if (counted[i] && a?.kind === 'answered' && a.value) yes += 1 })
      return yes >= this.majority || answeredAll(partial)
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
    if (yes >= this.majority) return true
    if (gone > this.nodes.length - this.majority) {
      this.holds.delete(hold.owner)
      return false
    }
    throw this.quorumError(hold.name, answers, counted, `could not downgrade "${hold.name}" on a majority of the redlock nodes in time`)
  }

  /**
   * Releases `owner` on every node (by its token there when known, else by
   * owner), then wakes the head of the line on the line node, after the
   * release on the same connection. A node whose answer to the granted
   * attempt has not come yet most likely drew the lease's own token (the
   * nodes' counters agree in the common case, see the class comment): it is
   * released by that token, and by owner where the token does not match
   * (the scripts' fallback), so the release is sent at once, ahead of
   * anything else this client sends that node, and usually takes the
   * scripts' short path (a release by owner runs the whole script).
   */
  private async releaseEverywhere(
    spec: LockSpec & { readonly owner: string }, state: HoldState | undefined, wake: boolean, leave: boolean,
  ): Promise<boolean> {
    const lineNode = this.lineNode()
    const bare = withoutToken(spec)
    const calls = this.nodes.map((node, i): NodeCall<boolean> => {
      const driver = node.driver
      if (!driver) return node.unreachable()
      return () => {
        const known = state?.tokens[i]
        const token = known ?? state?.token
        const guess = known === undefined
        const hold = token === undefined ? undefined : { ...bare, token }
        if (node !== lineNode) return driver.release(hold ?? bare, guess)
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
    const answers = await gather(calls, this.settings.timeoutMs, answeredAll)
    return answers.some((a) => a.kind === 'answered' && a.value)
  }

  /** Raises the counters of granting nodes that drew a lower token than the lease's (see the class comment). */
  private raiseTokens(name: string, tokens: readonly (bigint | undefined)[], token: bigint): void {
    tokens.forEach((t, i) => {
      const driver = this.nodes[i]!.driver
      if (t !== undefined && t < token && driver) {
        driver.call('raiseToken', name, [token.toString(), driver.fenceTtl]).catch(() => {})
      }
    })
  }

  watch(name: string, owner: string, onWake: (wake: Wake) => void): () => void {
    const fromNode = (wake: Wake): void => this.deliver(owner, wake)
    const route: Route = { name, onWake, fromNode, unwatch: [] }
    this.routes.set(owner, route)
    for (const node of this.nodes) if (node.driver) route.unwatch.push(node.driver.watch(name, owner, fromNode))
    return () => {
      if (this.routes.get(owner) !== route) return
      this.routes.delete(owner)
      // Also what adopt() registered on nodes that connected later.
      for (const unwatch of route.unwatch) unwatch()
    }
  }

  /** Wake-ups from the nodes: "retry" from the line node, "lost" from each node a forced release dropped. */
  private deliver(owner: string, wake: Wake): void {
    const route = this.routes.get(owner)
    if (!route) return
    if (wake.type === 'retry') {
      // A holder's "retry" is a node's resubscribe: that node's lost notice
      // may be gone, but the other nodes' notices are not, and a quorum
      // re-read now could declare a live hold lost only because a node is
      // down; its renewals decide.
      if (this.holds.has(owner)) return
      // Woken by a release (the head) or a forced release (everyone, the
      // line emptied): ask the nodes at once.
      const spot = this.spots.get(owner)
      if (spot) {
        spot.woken = true
        // Woken (a release, a give-back): the next stall is the first again.
        spot.stalls = 0
        spot.rank = 0
      }
      route.onWake(wake)
    } else if (wake.type === 'lost') {
      if (this.holds.delete(owner)) route.onWake(wake)
    }
    // 'granted' never comes: nobody is in a node's own line.
  }

  /** A node that connected after start-up: route the current owners' wake-ups through it too. */
  private adopt(driver: RedisDriver): void {
    for (const [owner, route] of this.routes) route.unwatch.push(driver.watch(route.name, owner, route.fromNode))
  }

  async inspect(name: string): Promise<(LockInfo & { readonly nodes: readonly NodeView[] }) | null> {
    const counted = this.countingNodes()
    const calls = this.nodes.map((node): NodeCall<LockInfo | null> => (node.driver ? () => node.driver!.inspect(name) : node.unreachable()))
    const lineNode = this.lineNode()
    const [answers, waiters] = await Promise.all([
      gather(calls, this.settings.timeoutMs, () => false),
      lineNode ? this.line.list(lineNode.driver!, name).catch(() => []) : Promise.resolve([]),
    ])
    const views: NodeView[] = answers.map((a, i) => {
      const node = this.nodes[i]!
      const guard = node.guardState(this.largestTtlMs)
      if (a.kind !== 'answered') return { node: node.display, state: 'down', reason: describeFailure(a, this.settings.timeoutMs) }
      const base = { node: node.display, state: guard.state, ...(guard.state === 'excluded' ? { reason: guard.reason } : {}) }
      return a.value ? { ...base, holders: a.value.holders, lastToken: a.value.lastToken } : base
    })
    const infos = answers.flatMap((a, i) => (counted[i] && a.kind === 'answered' && a.value ? [a.value] : []))
    // A holder is one that a majority of the nodes has; partial grants of a
    // split vote are on their way out.
    const byOwner = new Map<string, HolderSummary[]>()
    for (const info of infos) for (const h of info.holders) byOwner.set(h.owner, [...(byOwner.get(h.owner) ?? []), h])
    const holders: HolderSummary[] = []
    for (const [owner, seen] of byOwner) {
      if (seen.length < this.majority) continue
      // The end a majority still has; the token of the grant is the highest
      // of its nodes' tokens (the lease took the highest of those that had
      // answered, and a straggler's higher grant is being given back; this
      // client knows its own leases' tokens).
      const ends = seen.map((h) => h.expiresAt).sort((x, y) => y - x)
      const token = this.holds.get(owner)?.token ?? seen.map((h) => h.token).sort(descending)[0]!
      // Who asked and since when, as the nodes keep it (each node's own grant time; the earliest shown).
      const description = seen.find((h) => h.description !== undefined)?.description
      const since = Math.min(...seen.map((h) => h.since ?? Infinity))
      holders.push({
        owner, token, mode: seen[0]!.mode, expiresAt: ends[this.majority - 1]!,
        ...(description !== undefined ? { description } : {}),
        ...(Number.isFinite(since) ? { since } : {}),
      })
    }
    // Null only when no node has anything: a hold left on a minority (a node
    // excluded, a split vote on its way out) still shows in the per-node view.
    if (holders.length === 0 && waiters.length === 0 && !views.some((v) => v.holders?.length)) return null
    // The highest counter that a majority has reached: every granted token
    // was raised onto its majority, so it is at least each of them, and any
    // later majority shares a node with those, so the next token is above it.
    // (A single node's counter can be higher: a late or partial grant.)
    const counters = infos.map((info) => info.lastToken).sort(descending)
    const lastToken = counters[Math.min(counters.length, this.majority) - 1] ?? 0n
    const first = infos[0]
    return {
      name,
      kind: first?.kind ?? (waiters.some((w) => w.mode !== 'exclusive') ? 'rwlock' : 'mutex'),
      fair: first?.fair ?? false,
      permits: 1,
      holders,
      waiters,
      lastToken,
      nodes: views,
    }
  }

  /** Names from every node (SCAN only), then the quorum's view of just the page's names, in order. */
  async *list(prefix: string, page?: ListPage): AsyncIterable<LockInfo> {
    const names = new Set<string>()
    const reached = await Promise.all(this.nodes.map(async (node) => {
      if (!node.driver) return false
      try {
        for (const name of await node.driver.names(prefix)) names.add(name)
        return true
      } catch {
        return false
      }
    }))
    if (reached.filter(Boolean).length < this.majority) {
      throw new BatonError('QUORUM_NOT_REACHED', `list() reached only ${reached.filter(Boolean).length} of ${this.nodes.length} redlock nodes`)
    }
    yield* inspectInOrder(namesOfPage(names, prefix, page), limitOf(page), (name) => this.inspect(name))
  }

  async forceRelease(name: string): Promise<boolean> {
    const lineNode = this.lineNode()
    const calls = this.nodes.map((node): NodeCall<boolean> => {
      const driver = node.driver
      if (!driver) return node.unreachable()
      return () => {
        const done = driver.forceRelease(name)
        if (node === lineNode) this.line.wakeAll(driver, name).catch(() => {})
        return done
      }
    })
    const answers = await gather(calls, this.settings.timeoutMs, () => false)
    return answers.some((a) => a.kind === 'answered' && a.value)
  }

  async close(): Promise<void> {
    this.routes.clear()
    await Promise.all(this.nodes.map((node) => node.close()))
  }

  /** Which nodes' votes count now (the restart guard). */
  private countingNodes(): boolean[] {
    return this.nodes.map((node) => node.guardState(this.largestTtlMs).state === 'counted')
  }

  /** The node that keeps the line: the first of the URL that is connected. */
  private lineNode(): RedlockNode | undefined {
    return this.nodes.find((node) => node.ready)
  }

  private quorumError(name: string, answers: readonly Answer<unknown>[], counted: boolean[], summary: string): BatonError {
    const nodes: Record<string, string> = {}
    answers.forEach((a, i) => {
      const node = this.nodes[i]!
      const guard = node.guardState(this.largestTtlMs)
      if (a.kind !== 'answered') nodes[node.display] = describeFailure(a, this.settings.timeoutMs)
      else if (!counted[i]) nodes[node.display] = guard.state === 'excluded' ? guard.reason : 'reconnected; its run_id is not checked yet'
      else nodes[node.display] = describeAnswer(a.value)
    })
    const causes = Object.entries(nodes).map(([node, why]) => `${node}: ${why}`).join('; ')
    return new BatonError('QUORUM_NOT_REACHED', `${summary} [${causes}]`, { lockName: name, nodes })
  }
}

/** How long seeing a line makes this client's newcomers for that name join it before asking the nodes. */
const CONTENDED_FOR_MS = 1000

/** Rounds an acquire makes when a majority was missed only because nodes answered too late. */
const SLOW_ROUNDS = 3

/** QUORUM_NOT_REACHED because answers came too late: worth another round at once. */
class SlowQuorum extends Error {
  constructor(readonly error: BatonError) {
    super(error.message)
  }
}

function unwrapSlow(error: unknown): unknown {
  return error instanceof SlowQuorum ? error.error : error
}


const descending = (x: bigint, y: bigint): number => (x > y ? -1 : x < y ? 1 : 0)

function isGranted(answer: Answer<AcquireResult>): boolean {
  return answer.kind === 'answered' && answer.value.status === 'granted'
}

function describeAnswer(value: unknown): string {
  if (value && typeof value === 'object' && 'status' in value) {
    const status = (value as { status: string }).status
    if (status === 'busy') return 'held by another owner'
    return status
  }
  return 'answered'
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

function mostCommonHolder(holders: readonly (HolderSummary | undefined)[]): HolderSummary | undefined {
  const counts = new Map<string, { holder: HolderSummary; n: number }>()
  for (const h of holders) {
    if (!h) continue
    const seen = counts.get(h.owner)
    if (seen) seen.n += 1
    else counts.set(h.owner, { holder: h, n: 1 })
  }
  let best: { holder: HolderSummary; n: number } | undefined
  for (const c of counts.values()) if (!best || c.n > best.n) best = c
  return best?.holder
}

export const createRedlockDriver: DriverFactory = async (url: StoreUrl, options: DriverOptions) => {
  // [replicas hook] Replica acknowledgement is refused here, with the reason.
  refuseReplicaOptions(url)
  const settings = parseRedlockUrl(url)
  const nodes = settings.nodes.map((nodeUrl, index) => new RedlockNode(index, nodeUrl, options, settings.maxTtlMs))
  const failures = await Promise.all(nodes.map((node) => node.start(createRedisDriver)))
  const up = failures.filter((f) => f === undefined).length
  if (up < majorityOf(nodes.length)) {
    await Promise.all(nodes.map((node) => node.close()))
    const causes: Record<string, string> = {}
    nodes.forEach((node, i) => { causes[node.display] = failures[i] ?? 'connected' })
    // Refused credentials are no outage: trying again will not help.
    const refused = nodes.filter((node) => node.refusedCredentials)
    if (refused.length >= majorityOf(nodes.length)) {
      throw new BatonError('UNAUTHORIZED', `${refused.length} of ${nodes.length} redlock nodes of ${url.display} refused the connection: ` +
        `${failures[refused[0]!.index]}`, { nodes: causes })
    }
    throw new BatonError(
      'QUORUM_NOT_REACHED',
      `only ${up} of ${nodes.length} redlock nodes of ${url.display} could be reached (a majority is ${majorityOf(nodes.length)}) [` +
        Object.entries(causes).map(([n, why]) => `${n}: ${why}`).join('; ') + ']; start the nodes, or raise "connectTimeout"',
      { nodes: causes },
    )
  }
  return new RedlockDriver(nodes, settings, settings.keyPrefix)
}

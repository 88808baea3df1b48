import type { AcquireRequest, AcquireResult } from '../../core/driver.js'
import { monotonicNow } from '../../core/clock.js'
import type { BatonError } from '../../core/errors.js'
import { driftMs, validityMs, type Answer, type NodeCall } from './quorum.js'
import type { HoldState, Holds } from './holds.js'
import type { LinePlace } from './line.js'
import type { NodeSet } from './node-set.js'
import type { RedlockNode } from './node.js'
import type { Waiting } from './waiting.js'

/**
 * One Redlock acquire: a few rounds, each in small named steps: ask every
 * node (the restart guard judging each answer, late grants kept or given
 * back), count the votes, keep the lease or give everything back, and say
 * why it was not granted. Separate from the holds (what a lease is once
 * taken) and the waiting policy (when to try again), which it only calls.
 */

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

/** What one round learnt, for its verdict. */
interface Tally {
  readonly answers: Answer<AcquireResult>[]
  readonly counted: boolean[]
  /** Grants from nodes whose votes count. */
  readonly granted: number
  /** The line says others go first. */
  readonly yields: boolean
  readonly line: LinePlace | undefined
  readonly elapsed: number
  readonly drift: number
}

export class Attempts {
  constructor(private readonly nodes: NodeSet, private readonly holds: Holds, private readonly waiting: Waiting) {}

  async acquire(request: AcquireRequest): Promise<AcquireResult> {
    this.nodes.noteTtl(request.ttlMs)
    const spot = this.waiting.spotOf(request.owner)
    // Waiters behind the head, and newcomers while this client saw a line
    // lately, ask the line first (one command) and leave the nodes alone
    // unless they are first and the name is free.
    const behind = spot ? !spot.woken && spot.rank > 0 : request.enqueue && this.waiting.contended(request.name)
    if (behind) {
      const place = await this.waiting.placeInLine(request, true)
      if (place && !(place.rank === 0 && place.free)) return this.waiting.busy(request, undefined, place)
    }
    if (spot) spot.woken = false
    // A round lost to slow answers (not to refusals or dead connections) is
    // tried again a few times at once, by a random small delay: on a busy
    // machine a node can miss a short timeout now and then, and that alone
    // should not fail an acquire.
    for (let round = 1; ; round++) {
      try {
        return await this.round(request)
      } catch (error) {
        if (round >= SLOW_ROUNDS || !(error instanceof SlowQuorum)) throw unwrapSlow(error)
        await new Promise((resolve) => setTimeout(resolve, 2 + Math.random() * 10 * round))
      }
    }
  }

  /** One Redlock round: ask every node, count, keep it or give everything back. */
  private async round(request: AcquireRequest): Promise<AcquireResult> {
    const started = monotonicNow()
    const ttl = request.ttlMs
    const state = this.holds.fresh()
    const counted = this.nodes.counting()
    // Fair: who waits, asked on the line node in the same round trip; a
    // majority with others ahead in line is not taken (they were woken for
    // it). Readers ask too, fair or not: a reader lets a writer waiting ahead
    // of it go first (no writer starvation; see the comment atop index.ts).
    // Not fair: newcomers may barge, as with one Redis; while this client saw
    // a line lately its newcomers join it first (acquire()), and a barger
    // that splits the vote with the head goes behind it.
    const lineNode = this.nodes.lineNode()
    const peek = lineNode && (request.fair || request.mode === 'read') ? this.waiting.peek(lineNode, request) : undefined
    const answers = await this.ask(request, state, counted)
    const elapsed = monotonicNow() - started
    const drift = driftMs(ttl, this.nodes.settings.driftFactor, this.nodes.settings.driftMs)
    const granted = countGrants(answers, counted)
    const validity = validityMs(ttl, elapsed, drift)
    const line = await peek
    this.waiting.noteLine(request, line)
    const yields = line !== undefined && line.rank > 0

    if (granted >= this.nodes.majority && validity > 0 && !yields) return this.keep(request, state, drift)
    await this.giveBack(request, state, answers, lineNode)
    return this.verdict(request, { answers, counted, granted, yields, line, elapsed, drift })
  }

  /**
   * Asks every node for the hold (never into a node's own line), and
   * resolves as soon as the outcome is known (decided()). Each answer is
   * judged by the restart guard as it comes; a grant is recorded, or given
   * back when it came too late (Holds.noteGrant).
   */
  private ask(request: AcquireRequest, state: HoldState, counted: boolean[]): Promise<Answer<AcquireResult>[]> {
    const nodeRequest: AcquireRequest = { ...request, enqueue: false, queueTtlMs: 0 }
    const nodes = this.nodes.all
    const epochs = nodes.map((node) => node.guard.epoch)
    const drivers = nodes.map((node) => node.driver)
    // The script's arguments are the same on every node: made once a round.
    // An exclusive hold asks by the short vote first (redlock-vote.lua).
    const any = this.nodes.anyDriver()
    const argv = any?.acquireArgv(nodeRequest)
    const vote = any?.voteArgv(nodeRequest)
    const calls = nodes.map((node, i): NodeCall<AcquireResult> => {
      const driver = drivers[i]
      if (!driver || !argv) return node.unreachable()
      return () => (state.pending[i] = driver.acquireWith(nodeRequest, argv, vote))
    })
    return this.nodes.gather(calls, (partial) => decided(partial, counted, this.nodes.majority), {
      answered: (i, result) => {
        state.pending[i] = undefined
        counted[i] = counted[i]! && this.nodes.stillCounts(nodes[i]!, epochs[i]!)
        if (result.status === 'granted') this.holds.noteGrant(request, state, i, drivers[i]!, result.token)
      },
      failed: (i) => {
        state.pending[i] = undefined
      },
    })
  }

  /** The round won: the lease is this owner's, and it leaves the line. */
  private keep(request: AcquireRequest, state: HoldState, drift: number): AcquireResult {
    const token = this.holds.take(request, state)
    this.waiting.leaveIfWaiting(request)
    // The core counts this from when it sent the attempt (no later than
    // `started`), so right now the lease shows ttl − elapsed − drift: the
    // Redlock validity, and it keeps following it from there.
    return { status: 'granted', token, ttlMs: request.ttlMs - drift }
  }

  /**
   * Not ours: give back every node, also those that did not answer (a late
   * grant lands before this release on the same connection). Wakes the
   * head of the line if this attempt may have held the line node (the head
   * reads "free" there); never when this owner is the head itself.
   */
  private async giveBack(
    request: AcquireRequest, state: HoldState, answers: readonly Answer<AcquireResult>[], lineNode: RedlockNode | undefined,
  ): Promise<void> {
    const lineAnswer = lineNode ? answers[lineNode.index] : undefined
    const mayBlockHead = lineAnswer !== undefined && (isGranted(lineAnswer) || lineAnswer.kind !== 'answered')
    const isHead = this.waiting.isHead(request.owner)
    await this.holds.releaseEverywhere(request, state, mayBlockHead && !isHead, false)
  }

  /** Why a lost round was not granted: a conflict, too little validity, an outage (maybe only slow), or contention. */
  private async verdict(request: AcquireRequest, tally: Tally): Promise<AcquireResult> {
    const { answers, counted, granted, yields, elapsed, drift } = tally
    const majority = this.nodes.majority
    const conflict = answers.find((a): a is { kind: 'answered'; value: Extract<AcquireResult, { status: 'conflict' }> } =>
      a.kind === 'answered' && a.value.status === 'conflict')
    if (conflict) return conflict.value
    const heard = answers.filter((a, i) => counted[i] && a.kind === 'answered').length
    if (granted >= majority && !yields) {
      throw this.nodes.quorumError(request.name, answers, counted,
        `a majority granted "${request.name}" but only after ${Math.round(elapsed)} ms, leaving no validity of the ${request.ttlMs} ms ttl ` +
        `(drift ${drift} ms); it was released everywhere. Raise "ttl", or look at the nodes' latency`)
    }
    if (heard < majority) {
      const slow = answers.some((a, i) => counted[i] && a.kind === 'timeout') && heard + answers.filter((a) => a.kind === 'timeout').length >= majority
      const error = this.nodes.quorumError(request.name, answers, counted,
        `only ${heard} of ${this.nodes.size} redlock nodes answered in time for "${request.name}" (a majority is ${majority})`)
      throw slow ? new SlowQuorum(error) : error
    }
    // Held by someone, others first in line, or a split vote: that is
    // contention, not an outage.
    return this.waiting.busy(request, answers, request.enqueue ? await this.waiting.placeInLine(request, true) : tally.line)
  }
}

/** Grants from nodes whose votes count. */
function countGrants(answers: readonly Answer<AcquireResult>[], counted: readonly boolean[]): number {
  let granted = 0
  for (let i = 0; i < answers.length; i++) if (counted[i] && isGranted(answers[i]!)) granted += 1
  return granted
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
function decided(partial: readonly (Answer<AcquireResult> | undefined)[], counted: boolean[], majority: number): boolean {
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
  if (yes >= majority) return true
  if (yes + open >= majority) return false
  // Lost for sure; also known why: a majority answered (contention), or
  // too few can (an outage). Otherwise wait, so busy is never reported as down.
  return heard >= majority || heard + open < majority
}

function isGranted(answer: Answer<AcquireResult>): boolean {
  return answer.kind === 'answered' && answer.value.status === 'granted'
}

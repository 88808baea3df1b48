import type {
  AcquireRequest, AcquireResult, Capabilities, Driver, DriverFactory, DriverOptions, ExtendResult,
  HoldRef, ListPage, LockInfo, LockSpec, NodeView, Wake,
} from '../../core/driver.js'
import { BatonError } from '../../core/errors.js'
import type { StoreUrl } from '../../core/url.js'
import { createRedisDriver } from '../redis/index.js'
import { refuseReplicaOptions } from '../redis/replicas.js'
import { wakeChannelPrefix } from '../redis/keys.js'
import { Attempts } from './attempt.js'
import { Holds } from './holds.js'
import { Inspector } from './inspect.js'
import { Line } from './line.js'
import { NodeSet } from './node-set.js'
import { RedlockNode } from './node.js'
import { majorityOf, type NodeCall } from './quorum.js'
import { parseRedlockUrl, type RedlockSettings } from './settings.js'
import { Waiting } from './waiting.js'
import { Wakeups } from './wakeups.js'

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
 * Fencing tokens: each node's grant draws a token from that node's counter.
 * An exclusive hold asks by a short vote first (redis/scripts/redlock-vote.lua,
 * redlock-unvote.lua for its release; the node's full scripts decide
 * whatever they do not): on a name free there with nothing around it, the
 * token is the counter + 1. Everything else goes through acquire.lua, whose
 * token is one above the counter and never below the node's clock floored
 * to whole milliseconds, in µs (redis/scripts/token.lua; ARGV[5], set by
 * RedlockNode; redis:// floors by the µs); that is also how a counter is
 * seeded when a name is new, idle past `?fenceTtl=`, or its node restarted
 * empty. The lease takes the highest token of its grants, and every granting
 * node whose counter is lower is raised to it at once (scripts/raise-token.lua,
 * sent before anything else this client sends that node, so before the hold
 * there can end); the hold there takes the lease's token in place, so the
 * node's next release and vote keep their short paths. Any two majorities
 * share a node; on that node the later majority's grant comes after the
 * earlier hold ended, so after the raise, and its counter, hence the later
 * token, is larger. Limits: a majority must keep its data (a node restarted
 * empty is kept out of majorities by the restart guard until every lease it
 * may have held ran out, but its counter restarts from the clock floor,
 * which only helps where the nodes' clocks agree); a raise delayed past the
 * ttl by the network; and bounded state drops idle counters, leaving the
 * clock floor. A counter grows by one a grant, and the clock by one a µs:
 * a token stays below every later clock floor while a name averages fewer
 * than one grant per µs since its counter was seeded (the µs floor's rate
 * bound). Why counter + 1 in the vote, and the ms floor elsewhere: after a
 * raise all granting nodes' counters are equal, so the next votes draw equal
 * tokens and need no raise. With the clock floor in every grant, nodes
 * disagreed whenever a millisecond boundary (or a clock offset) fell between
 * their grants, which sent a raise after 7–15 % of node-pairs and, through
 * the raise's counter floor, that node's next calls down the slow path;
 * with a µs floor nearly every grant sent N − 1 raises.
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
 * it overlap a reader. Downgrade: see Holds.downgrade(). The semaphore stays
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

/**
 * The Redlock driver assembled from its parts: the nodes as one body
 * (node-set.ts), the acquire rounds (attempt.ts), this client's leases
 * (holds.ts), its side of the line (waiting.ts, line.ts), wake-up routes
 * (wakeups.ts) and the operator's view (inspect.ts).
 */
export class RedlockDriver implements Driver {
  readonly store = 'redlock'
  readonly capabilities = CAPABILITIES
  readonly electionRefusal = ELECTION_REFUSAL
  private readonly nodes: NodeSet
  private readonly line: Line
  private readonly holds: Holds
  private readonly waiting: Waiting
  private readonly attempts: Attempts
  private readonly wakeups: Wakeups
  private readonly inspector: Inspector

  constructor(nodes: readonly RedlockNode[], settings: RedlockSettings, keyPrefix: string, commandTimeoutMs?: number) {
    this.nodes = new NodeSet(nodes, settings, commandTimeoutMs)
    this.line = new Line(wakeChannelPrefix(keyPrefix))
    this.holds = new Holds(this.nodes, this.line)
    this.waiting = new Waiting(this.nodes, this.line)
    this.attempts = new Attempts(this.nodes, this.holds, this.waiting)
    this.wakeups = new Wakeups(this.nodes, this.holds, this.waiting)
    this.inspector = new Inspector(this.nodes, this.line, this.holds)
    for (const node of nodes) node.onConnected = (driver) => this.wakeups.adopt(driver)
  }

  acquire(request: AcquireRequest): Promise<AcquireResult> {
    const refusal = request.value !== undefined ? ELECTION_REFUSAL : REFUSED[request.kind]
    if (refusal) return Promise.resolve({ status: 'conflict', detail: refusal })
    return this.attempts.acquire(request)
  }

  extend(holds: readonly HoldRef[], ttlMs: number): Promise<ExtendResult[]> {
    return this.holds.extend(holds, ttlMs)
  }

  release(hold: HoldRef | (LockSpec & { readonly owner: string })): Promise<boolean> {
    return this.holds.release(hold, this.waiting.forget(hold.owner))
  }

  /** See Holds.downgrade. */
  downgrade(hold: HoldRef): Promise<boolean> {
    return this.holds.downgrade(hold)
  }

  watch(name: string, owner: string, onWake: (wake: Wake) => void): () => void {
    return this.wakeups.watch(name, owner, onWake)
  }

  inspect(name: string): Promise<(LockInfo & { readonly nodes: readonly NodeView[] }) | null> {
    return this.inspector.inspect(name)
  }

  list(prefix: string, page?: ListPage): AsyncIterable<LockInfo> {
    return this.inspector.list(prefix, page)
  }

  async forceRelease(name: string): Promise<boolean> {
    const lineNode = this.nodes.lineNode()
    const calls = this.nodes.all.map((node): NodeCall<boolean> => {
      const driver = node.driver
      if (!driver) return node.unreachable()
      return () => {
        const done = driver.forceRelease(name)
        if (node === lineNode) this.line.wakeAll(driver, name).catch(() => {})
        return done
      }
    })
    const answers = await this.nodes.gather(calls, () => false)
    return answers.some((a) => a.kind === 'answered' && a.value)
  }

  async close(): Promise<void> {
    this.wakeups.clear()
    await this.nodes.close()
  }
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
  return new RedlockDriver(nodes, settings, settings.keyPrefix, options.commandTimeoutMs)
}

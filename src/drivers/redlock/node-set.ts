import { BatonError } from '../../core/errors.js'
import { describeFailure, gather, majorityOf, VoteDeadlines, type Answer, type AnswerHooks, type NodeCall } from './quorum.js'
import type { RedisDriver } from '../redis/index.js'
import type { RedlockNode } from './node.js'
import type { GuardState } from './restart-guard.js'
import type { RedlockSettings } from './settings.js'

/**
 * The Redlock nodes as one body: the majority, whose votes count right now
 * (the restart guard), which node keeps the line, and how a missed majority
 * is told to the user. Separate from the operations that use them (attempt,
 * holds, inspect), which all ask the same questions of the same nodes.
 */
export class NodeSet {
  readonly majority: number
  /** The largest ttl this client asked for: how long a restarted node stays excluded at least. */
  private largestTtlMs = 0
  private readonly deadlines: VoteDeadlines
  /**
   * Reads for people (inspect, list) are no votes: no validity is counted
   * from them, so they wait for each node as long as a command may take. A
   * node that misses the vote timeout on a busy machine would otherwise make
   * a held name look free.
   */
  private readonly readDeadlines: VoteDeadlines

  constructor(readonly all: readonly RedlockNode[], readonly settings: RedlockSettings, commandTimeoutMs = settings.timeoutMs) {
    this.majority = majorityOf(all.length)
    this.deadlines = new VoteDeadlines(settings.timeoutMs)
    this.readDeadlines = new VoteDeadlines(Math.max(settings.timeoutMs, commandTimeoutMs))
  }

  get size(): number {
    return this.all.length
  }

  /** An acquire asks for `ttlMs`: the restart guard's window grows with it. */
  noteTtl(ttlMs: number): void {
    if (ttlMs > this.largestTtlMs) this.largestTtlMs = ttlMs
  }

  /** Which nodes' votes count now (the restart guard). */
  counting(): boolean[] {
    return this.all.map((node) => node.guardState(this.largestTtlMs).state === 'counted')
  }

  /**
   * The restart guard, judged per answer, not once per round: a node that
   * restarted while a request waited (re-sent on the new connection) does
   * not vote. `epoch`: the node's connection when the request was sent.
   */
  stillCounts(node: RedlockNode, epoch: number): boolean {
    return node.guard.counts(epoch, this.largestTtlMs)
  }

  guardState(node: RedlockNode): GuardState {
    return node.guardState(this.largestTtlMs)
  }

  /**
   * A connected node's driver, to build a script's arguments once for all
   * nodes: they share the client id, key prefix, fence ttl and token clock
   * unit (RedlockNode.wire), so every node would build the same.
   */
  anyDriver(): RedisDriver | undefined {
    for (const node of this.all) if (node.driver) return node.driver
    return undefined
  }

  /** The node that keeps the line: the first of the URL that is connected. */
  lineNode(): RedlockNode | undefined {
    return this.all.find((node) => node.ready)
  }

  /** Sends one call per node at once, bounded by the vote timeout (quorum.ts gather). */
  gather<T>(
    calls: readonly NodeCall<T>[], settled: (answers: readonly (Answer<T> | undefined)[]) => boolean, hooks?: AnswerHooks<T>,
  ): Promise<Answer<T>[]> {
    return gather(calls, this.deadlines, settled, hooks)
  }

  /** As gather, for a read that counts no validity (inspect, list): bounded by the command timeout instead. */
  gatherRead<T>(calls: readonly NodeCall<T>[]): Promise<Answer<T>[]> {
    return gather(calls, this.readDeadlines, () => false)
  }

  describeFailure(answer: Answer<unknown>): string {
    return describeFailure(answer, this.settings.timeoutMs)
  }

  /** A node's failure to answer a read (gatherRead). */
  describeReadFailure(answer: Answer<unknown>): string {
    return describeFailure(answer, this.readDeadlines.timeoutMs)
  }

  quorumError(name: string, answers: readonly Answer<unknown>[], counted: boolean[], summary: string): BatonError {
    const nodes: Record<string, string> = {}
    answers.forEach((a, i) => {
      const node = this.all[i]!
      const guard = this.guardState(node)
      if (a.kind !== 'answered') nodes[node.display] = this.describeFailure(a)
      else if (!counted[i]) nodes[node.display] = guard.state === 'excluded' ? guard.reason : 'reconnected; its run_id is not checked yet'
      else nodes[node.display] = describeAnswer(a.value)
    })
    const causes = Object.entries(nodes).map(([node, why]) => `${node}: ${why}`).join('; ')
    return new BatonError('QUORUM_NOT_REACHED', `${summary} [${causes}]`, { lockName: name, nodes })
  }

  async close(): Promise<void> {
    this.deadlines.close()
    this.readDeadlines.close()
    await Promise.all(this.all.map((node) => node.close()))
  }
}

function describeAnswer(value: unknown): string {
  if (value && typeof value === 'object' && 'status' in value) {
    const status = (value as { status: string }).status
    if (status === 'busy') return 'held by another owner'
    return status
  }
  return 'answered'
}

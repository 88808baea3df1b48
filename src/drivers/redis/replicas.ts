/**
 * Replica acknowledgement (`?replicas=N&replicaTimeout=500ms`): a grant or a
 * renewal counts only once N replicas have it. Separate from the driver's
 * scripts because it is one policy laid over all of them: which write is
 * waited for, on which connection, and what an unacknowledged one means.
 *
 * The design, and why (docs/stores/redis.md, "Replica acknowledgement"):
 * - WAIT counts the replication offset of the *connection's own* last write.
 *   So every acknowledgement is one pipeline on the command connection: the
 *   extend script (a real write: it sets the hold's expiry again, and Redis
 *   replicates a script by its effects) and WAIT right behind it. A pipeline
 *   goes whole to one socket (on a Cluster, to the node owning the name's
 *   slot), and ioredis either sends it again whole on a new connection or
 *   aborts its unanswered tail, so WAIT never counts another connection's
 *   offset. MULTI can not carry it: WAIT inside MULTI never blocks.
 * - Every grant is confirmed this way, whatever wrote it: this client's
 *   acquire script, an earlier attempt of the same owner (a retry answered
 *   "granted" writes nothing), or another client's release handing the name
 *   over. The replication stream is ordered: replicas that acknowledged the
 *   extend have every write before it, the grant included. One more round
 *   trip per grant, the price of one rule for all three.
 * - A hand-over's wake-up is delivered as "retry", not "granted": the new
 *   holder's attempt then finds its grant (idempotent acquire) and confirms
 *   it as above before the core is told it holds. The releaser can not wait
 *   for it: the notice is published from inside its release script.
 * - A renewal reports "extended" only once acknowledged; otherwise it fails
 *   like a renewal the store did not answer, so the deadline stays where it
 *   was and the watchdog's loss timer fires the hold's signal in time.
 * - A release does not wait: a release a failover loses only leaves the
 *   hold to expire, delaying the next grant by at most the ttl.
 */
import type { Pipeline } from 'ioredis'
import type { AcquireRequest, AcquireResult, ExtendResult, HoldRef, Wake } from '../../core/driver.js'
import { backendUnavailable, BatonError, invalidArgument } from '../../core/errors.js'
import type { StoreUrl } from '../../core/url.js'
import { parseDuration } from '../../core/duration.js'
import type { RedisClient } from './connection.js'
import type { Scripts } from './scripts.js'

/** The URL options, exactly these names (src/drivers/registry.ts lists them). */
export const REPLICA_OPTIONS = ['replicas', 'replicaTimeout'] as const

const DEFAULT_REPLICA_TIMEOUT = '500ms'

export interface ReplicaPolicy {
  /** How many replicas must acknowledge each grant and renewal. */
  readonly replicas: number
  readonly timeoutMs: number
}

/** The policy a URL asks for; undefined without `?replicas=` (0 is the same as absent). */
export function replicaPolicyOf(url: StoreUrl, commandTimeoutMs: number): ReplicaPolicy | undefined {
  const count = url.params.get('replicas')
  const timeout = url.params.get('replicaTimeout')
  if (count === null) {
    if (timeout !== null) throw invalidArgument(`"replicaTimeout" in ${url.display} needs "replicas" (how many replicas must acknowledge a grant)`)
    return undefined
  }
  if (!/^\d{1,3}$/.test(count)) throw invalidArgument(`"replicas" in ${url.display} must be a whole number of replicas (0-999), got ${JSON.stringify(count)}`)
  const replicas = Number(count)
  if (replicas === 0) return undefined
  const raw = timeout ?? DEFAULT_REPLICA_TIMEOUT
  const timeoutMs = parseDuration(/^\d+$/.test(raw) ? Number(raw) : raw, 'replicaTimeout (in the store URL)')
  // WAIT holds the command connection for up to this long; a command deadline
  // shorter than it would report a slow acknowledgement as a store outage.
  if (timeoutMs >= commandTimeoutMs) {
    throw invalidArgument(`"replicaTimeout" (${timeoutMs} ms) in ${url.display} must be shorter than "commandTimeout" (${commandTimeoutMs} ms) in connect() options`)
  }
  return { replicas, timeoutMs }
}

/** Redlock's refusal: its nodes are independent masters; their safety is the majority, not replicas. */
export function refuseReplicaOptions(url: StoreUrl): void {
  for (const option of REPLICA_OPTIONS) {
    if (url.params.has(option)) {
      throw invalidArgument(
        `"${option}" does not apply to ${url.scheme}:// (${url.display}): Redlock's nodes are independent masters, each answering alone, ` +
          'and its safety is the majority of them; for replica acknowledgement use redis://, redis+sentinel:// or redis+cluster:// with ?replicas=N',
      )
    }
  }
}

/** The typed, retryable failure of a grant (given back) or renewal (not counted) the replicas did not acknowledge in time. */
export function replicaAckTimeout(name: string, what: 'grant' | 'renewal', policy: ReplicaPolicy, acknowledged: number): BatonError {
  const then = what === 'grant' ? 'the grant was given back; try again' : 'the lease keeps its previous deadline'
  return new BatonError(
    'REPLICA_ACK_TIMEOUT',
    `the ${what} of "${name}" was acknowledged by ${acknowledged} of the ${policy.replicas} replicas asked ("replicas" in the store URL) ` +
      `within ${policy.timeoutMs} ms ("replicaTimeout"); ${then}`,
    { lockName: name },
  )
}

/** What the acknowledgements need of the driver: its scripts, keys and give-back. */
export interface AckedStore {
  readonly client: RedisClient
  readonly scripts: Scripts
  readonly display: string
  /** The extend script's arguments for `hold` (key, member, ttl, delay). */
  extendArgv(hold: HoldRef, ttlMs: number): (string | number)[]
  /** Gives back a grant that was not acknowledged. */
  giveBack(hold: HoldRef): Promise<unknown>
}

export class ReplicaAcks {
  constructor(
    private readonly store: AckedStore,
    readonly policy: ReplicaPolicy,
    /** Redis >= 7.2 with AOF on: WAITAOF (replicas' disks) instead of WAIT (their memory). */
    private readonly waitAof: boolean,
  ) {}

  /** A granted attempt, confirmed: granted once acknowledged (its lease counted from the confirming write), else given back and REPLICA_ACK_TIMEOUT. */
  async confirmGrant(request: AcquireRequest, granted: Extract<AcquireResult, { status: 'granted' }>): Promise<AcquireResult> {
    const hold: HoldRef = { ...request, token: granted.token }
    const { ttlMs, acknowledged } = await this.renewAndWait(hold, request.ttlMs)
    // Gone between the grant and its confirmation (forced, or a failover lost it): try again.
    if (ttlMs === 0) return { status: 'busy', retryAfterMs: 0 }
    if (acknowledged < this.policy.replicas) {
      await this.store.giveBack(hold).catch(() => {})
      throw replicaAckTimeout(request.name, 'grant', this.policy, acknowledged)
    }
    return { status: 'granted', token: granted.token, ttlMs }
  }

  /** Renewals: "extended" only once acknowledged; an unacknowledged one fails as one the store did not answer. */
  async extend(holds: readonly HoldRef[], ttlMs: number): Promise<ExtendResult[]> {
    return Promise.all(
      holds.map(async (hold): Promise<ExtendResult> => {
        const confirmed = await this.renewAndWait(hold, ttlMs)
        if (confirmed.ttlMs === 0) return { status: 'lost' }
        if (confirmed.acknowledged < this.policy.replicas) throw replicaAckTimeout(hold.name, 'renewal', this.policy, confirmed.acknowledged)
        return { status: 'extended', ttlMs: confirmed.ttlMs }
      }),
    )
  }

  /**
   * A hand-over's "granted" becomes "retry": the owner's next attempt finds
   * the grant and confirms it (confirmGrant) before the core hears of it.
   */
  deferGrants(onWake: (wake: Wake) => void): (wake: Wake) => void {
    return (wake) => onWake(wake.type === 'granted' ? { type: 'retry' } : wake)
  }

  /** The extend script and WAIT (or WAITAOF) in one pipeline: the ttl set (0: the hold is gone) and how many replicas have it. */
  private async renewAndWait(hold: HoldRef, ttlMs: number): Promise<{ ttlMs: number; acknowledged: number }> {
    const argv = this.store.extendArgv(hold, ttlMs)
    try {
      let replies = await this.send(argv, 'evalsha')
      // SCRIPT FLUSH on a live connection: the script ran nowhere; once more, whole.
      if (replies[0] instanceof Error && replies[0].message.startsWith('NOSCRIPT')) replies = await this.send(argv, 'eval')
      const [extended, waited] = replies
      if (extended instanceof Error) throw extended
      if (waited instanceof Error) throw waited
      const acknowledged = Array.isArray(waited) ? Number(waited[1]) : Number(waited)
      return { ttlMs: Number(extended), acknowledged }
    } catch (cause) {
      throw backendUnavailable(`redis store at ${this.store.display}`, cause)
    }
  }

  private async send(argv: (string | number)[], how: 'evalsha' | 'eval'): Promise<unknown[]> {
    const pipeline = this.store.client.pipeline() as Pipeline
    pipeline.sendCommand(this.store.scripts.command('extend', argv, how))
    const { replicas, timeoutMs } = this.policy
    if (this.waitAof) pipeline.call('waitaof', 0, replicas, timeoutMs)
    else pipeline.call('wait', replicas, timeoutMs)
    const results = (await pipeline.exec()) ?? []
    return results.map(([error, reply]) => error ?? reply)
  }
}

/**
 * Detected once at connect: WAITAOF (Redis >= 7.2) where the master writes
 * an AOF, so that replicas' disks are what counts where the operator keeps
 * them; WAIT (replicas' memory) otherwise. A replica without AOF never
 * acknowledges WAITAOF: grants then fail loudly, never silently weaker.
 */
export async function replicaAcksFor(store: AckedStore, policy: ReplicaPolicy | undefined): Promise<ReplicaAcks | undefined> {
  if (!policy) return undefined
  const node = 'nodes' in store.client ? store.client.nodes('master')[0] ?? store.client : store.client
  const [server, persistence] = await Promise.all([node.info('server'), node.info('persistence')])
  const [major = 0, minor = 0] = (/^redis_version:(\d+)\.(\d+)/m.exec(server) ?? []).slice(1).map(Number)
  const hasWaitAof = major > 7 || (major === 7 && minor >= 2)
  return new ReplicaAcks(store, policy, hasWaitAof && /^aof_enabled:1/m.test(persistence))
}

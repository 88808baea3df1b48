import type {
  AcquireRequest, AcquireResult, Capabilities, Driver, DriverFactory, DriverOptions, ExtendResult,
  HoldRef, ListPage, LockInfo, LockSpec, Wake,
} from '../../core/driver.js'
import { inspect } from 'node:util'
import { backendUnavailable } from '../../core/errors.js'
import type { StoreUrl } from '../../core/url.js'
import type { Cluster } from 'ioredis'
import { openClient, redisTarget, type RedisClient, type RedisTarget } from './connection.js'
import { Election, NOTICE_MARK } from './election.js'
import { Holds } from './holds.js'
import { Inspector } from './inspect.js'
import { NameScripts } from './name-scripts.js'
import { loadScripts, type ScriptName } from './scripts.js'
import { WakeChannels } from './wake-channels.js'
import { baseKey } from './keys.js'
import { memberOf } from './members.js'
import { replicaAcksFor, replicaPolicyOf, type AckedStore, type ReplicaAcks } from './replicas.js'

const CAPABILITIES: Capabilities = {
  fair: true, rwlock: true, semaphore: true, lockDelay: true, handoff: true, durableTokens: false,
}

/**
 * Redis (single, Sentinel, Cluster). Each operation is one Lua script, one
 * round trip; a release hands the name to the next in line inside the same
 * script and publishes to that waiter's client only.
 *
 * Assembled from its parts: the calls that grant, renew and end holds
 * (holds.ts), wake-up channels and routes (wake-channels.ts), election
 * (election.ts), inspect and list (inspect.ts), the scripts' runner
 * (name-scripts.ts) and the store layout of holds (members.ts).
 */
export class RedisDriver implements Driver {
  readonly store = 'redis'
  readonly capabilities = CAPABILITIES
  private readonly scripts: NameScripts
  private readonly channels: WakeChannels
  private readonly holds: Holds
  // [replicas hook] `?replicas=N`: grants and renewals wait for the replicas (replicas.ts); set at connect.
  replicaAcks: ReplicaAcks | undefined
  private readonly election: Election
  private readonly inspector: Inspector

  constructor(
    private readonly client: RedisClient,
    private readonly subscriber: RedisClient,
    private readonly target: RedisTarget,
    readonly clientId: string,
    private readonly fenceTtlMs: number,
    /** Redis Cluster >= 7: wake-ups by SPUBLISH on per-slot channels (see keys.ts). */
    readonly sharded = false,
  ) {
    this.scripts = new NameScripts(client, target)
    this.channels = new WakeChannels(subscriber, target, clientId, sharded)
    this.holds = new Holds(this.scripts, this.channels, target.keyPrefix, clientId, fenceTtlMs)
    this.election = new Election(this.scripts, this.channels, subscriber, target)
    this.inspector = new Inspector(this.scripts, client, target)
    const onMessage = (channel: string, message: string): void => {
      if (channel.includes(NOTICE_MARK)) this.election.notices(channel)
      else this.channels.dispatch(message)
    }
    subscriber.on('message', onMessage)
    subscriber.on('smessage', onMessage)
  }

  /**
   * The fencing counter's clock floor is the store clock rounded down to
   * this many µs (acquire.lua ARGV[5]). 1 here; the Redlock driver sets
   * 1000 on its nodes so that their tokens agree in the common case.
   */
  get tokenClockUnitUs(): number {
    return this.holds.tokenClockUnitUs
  }

  set tokenClockUnitUs(unit: number) {
    this.holds.tokenClockUnitUs = unit
  }

  /**
   * Script calls of one turn go as one EVALSHA (ScriptBatch). The Redlock
   * driver turns it off on its nodes: a Redlock attempt sends one call per
   * node, so there is nothing to batch for one flow. It was turned off when
   * a conformance test (a holder dying before 20 waiters) counted a herd of
   * attempts under CPU load with it on; the cause was found later in the
   * Redlock driver (a head retrying at once for a holder granted without
   * the line node; docs/hot-path.md) and fixed there, and the same spin
   * showed with batching off. Left off: it gives a Redlock flow nothing.
   */
  get batchScripts(): boolean {
    return this.scripts.batch
  }

  set batchScripts(batch: boolean) {
    this.scripts.batch = batch
  }

  get wakeChannel(): string {
    return this.channels.wakeChannel
  }

  /** Sends again the give-backs that failed for want of a connection (the command connection is ready again). */
  resendGiveBacks(): void {
    this.holds.resendGiveBacks()
  }

  acquire(request: AcquireRequest): Promise<AcquireResult> {
    return this.confirmed(request, this.holds.acquire(request))
  }

  /** See Holds.acquireArgv: the Redlock driver makes an attempt's arguments once for all its nodes. */
  acquireArgv(request: AcquireRequest): (string | number)[] {
    return this.holds.acquireArgv(request)
  }

  /** See Holds.voteArgv: the Redlock driver's short vote, where it applies. */
  voteArgv(request: AcquireRequest): (string | number)[] | undefined {
    return this.holds.voteArgv(request)
  }

  /** acquire() with its arguments made already (acquireArgv), and the short vote first where given (voteArgv). */
  acquireWith(request: AcquireRequest, argv: readonly (string | number)[], vote?: readonly (string | number)[]): Promise<AcquireResult> {
    return this.confirmed(request, this.holds.acquireWith(request, argv, vote))
  }

  private confirmed(request: AcquireRequest, sent: Promise<AcquireResult>): Promise<AcquireResult> {
    const acks = this.replicaAcks
    if (!acks) return sent
    // [replicas hook] A grant counts once the replicas acknowledged it (replicas.ts).
    return sent.then((result) => (result.status === 'granted' ? acks.confirmGrant(request, result) : result))
  }

  extend(holds: readonly HoldRef[], ttlMs: number): Promise<ExtendResult[]> {
    // [replicas hook] Renewals count once the replicas acknowledged them (replicas.ts).
    if (this.replicaAcks) return this.replicaAcks.extend(holds, ttlMs)
    return this.holds.extend(holds, ttlMs)
  }

  // [replicas hook] What replicas.ts needs of this driver: connection, scripts, extend's arguments, give-back.
  ackedStore(): AckedStore {
    return {
      client: this.client,
      scripts: this.scripts.scripts,
      display: this.target.display,
      extendArgv: (hold, ttlMs) => [baseKey(this.target.keyPrefix, hold.name), memberOf(hold), ttlMs, hold.lockDelayMs],
      giveBack: (hold) => this.release(hold),
    }
  }

  /**
   * The Redlock driver's nodes: wake-ups of every owner go to `route` (the
   * Redlock driver keeps its own routes, one per owner rather than one per
   * owner and node), and a resubscribe's nudge to `nudge`.
   */
  watchEveryOwner(route: (owner: string, wake: Wake) => void, nudge: () => void): void {
    this.channels.everyOwner(route, nudge)
  }

  /** See Holds.release (`guess`: the Redlock driver). */
  release(hold: HoldRef | (LockSpec & { owner: string }), guess = false): Promise<boolean> {
    return this.holds.release(hold, guess)
  }

  /** See Holds.releaseArgv and acquireArgv. */
  releaseArgv(hold: HoldRef | (LockSpec & { owner: string }), guess: boolean): (string | number)[] {
    return this.holds.releaseArgv(hold, guess)
  }

  /** See Holds.unvoteArgv: the Redlock driver's short release, where it applies. */
  unvoteArgv(hold: HoldRef | (LockSpec & { owner: string })): (string | number)[] | undefined {
    return this.holds.unvoteArgv(hold)
  }

  releaseWith(hold: HoldRef | (LockSpec & { owner: string }), argv: readonly (string | number)[], unvote?: readonly (string | number)[]): Promise<boolean> {
    return this.holds.releaseWith(hold, argv, unvote)
  }

  downgrade(hold: HoldRef): Promise<boolean> {
    return this.holds.downgrade(hold)
  }

  /** Tells every watched owner to try again now (wake-ups may have been missed), and every observer to look. */
  nudgeAll(): void {
    this.channels.nudgeAll()
    this.election.nudgeAll()
  }

  proclaim(hold: HoldRef, value: string): Promise<boolean> {
    return this.election.proclaim(hold, value)
  }

  observe(name: string, onChange: () => void): () => void {
    return this.election.observe(name, onChange)
  }

  /** The observer channels to subscribe again after a reconnect. */
  observedChannels(): string[] {
    return this.election.observedChannels()
  }

  watch(_name: string, owner: string, onWake: (wake: Wake) => void): () => void {
    // [replicas hook] A hand-over is confirmed by the new holder's next attempt (replicas.ts).
    return this.channels.watch(owner, this.replicaAcks ? this.replicaAcks.deferGrants(onWake) : onWake)
  }

  inspect(name: string): Promise<LockInfo | null> {
    return this.inspector.inspect(name)
  }

  list(prefix: string, page?: ListPage): AsyncIterable<LockInfo> {
    return this.inspector.list(prefix, page)
  }

  /** Names in use under `prefix` (a superset: some may be idle by now), unordered, from the index of names in use. */
  names(prefix: string): Promise<Set<string>> {
    return this.inspector.names(prefix)
  }

  async forceRelease(name: string): Promise<boolean> {
    return Number(await this.call('forceRelease', name, [this.channels.channelFor(name), this.fenceTtlMs])) > 0
  }

  async close(): Promise<void> {
    this.holds.close()
    this.channels.clear()
    this.election.close()
    await Promise.allSettled([this.client.quit(), this.subscriber.quit()])
    this.client.disconnect()
    this.subscriber.disconnect()
  }

  /** The fence ttl this node's scripts are given (the Redlock line node's release needs it). */
  get fenceTtl(): number {
    return this.fenceTtlMs
  }

  /** For drivers built from several Redis nodes (redlock): this node's command connection. */
  get connection(): RedisClient {
    return this.client
  }

  /** Runs a script on `name` (its one key, the name's base) with `args`. */
  call(script: ScriptName, name: string, args: (string | number)[]): Promise<unknown> {
    return this.scripts.call(script, name, args)
  }

  /** util.inspect(baton) must show neither the password nor the clients' options. */
  [inspect.custom](): string {
    return `RedisDriver { ${this.target.display} }`
  }
}

export const createRedisDriver: DriverFactory = async (url: StoreUrl, options: DriverOptions) => {
  const target = redisTarget(url, options)
  // [replicas hook] `?replicas=N&replicaTimeout=`: checked before connecting (replicas.ts).
  const replicaPolicy = replicaPolicyOf(url, options.commandTimeoutMs)
  loadScripts()
  const client = await openClient(target, options.connectTimeoutMs)
  let subscriber: RedisClient
  try {
    const sharded = target.cluster && (await majorVersion(client)) >= 7
    subscriber = await openClient(target, options.connectTimeoutMs, sharded ? 'sharded-subscriber' : 'subscriber')
    const driver = new RedisDriver(client, subscriber, target, options.clientId, Math.ceil(options.fenceTtlMs), sharded)
    // [replicas hook] `?replicas=N`: WAIT / WAITAOF after grants and renewals, detected here (replicas.ts).
    driver.replicaAcks = await replicaAcksFor(driver.ackedStore(), replicaPolicy).catch((error: unknown) => {
      subscriber.disconnect()
      throw error
    })
    // A give-back the connection could not carry goes once it is back (Holds.release).
    client.on('ready', () => driver.resendGiveBacks())
    if (sharded) {
      watchShardedSubscriptions(subscriber as Cluster, driver)
      return driver
    }
    await subscriber.subscribe(driver.wakeChannel)
    // After a reconnect (or failover, or CLIENT KILL TYPE pubsub): wake-ups
    // sent meanwhile are lost. Once subscribed again, every waiter checks at
    // once (a hand-over it missed is found by its attempt) instead of
    // sleeping until its retry timer.
    subscriber.on('ready', () => {
      subscriber.subscribe(driver.wakeChannel, ...driver.observedChannels()).then(() => driver.nudgeAll(), () => {})
    })
    return driver
  } catch (cause) {
    client.disconnect()
    throw backendUnavailable(`redis store at ${target.display}`, cause)
  }
}

/**
 * Sharded pub/sub (Cluster >= 7): ioredis keeps one subscriber per master and
 * subscribes each slot's channels on the node serving that slot, again
 * whenever a subscriber connection was lost (killed, a node restarted) or the
 * slots moved; it reports each such round by 'subscribersReady'. Wake-ups and
 * notices published in between were lost: every waiter and holder looks
 * again at once (a missed forced release ends the hold now, a missed
 * hand-over is found by the waiter's attempt), as on redis:// after a
 * reconnect, instead of at its next renewal or line refresh.
 * A node that gives a slot away (a reshard) unsubscribes its clients from
 * the slot's channels by a pushed "sunsubscribe". ioredis does not expect
 * it (it reports a queue error for that node), and its subscriber would
 * stay on the old node until something made it read the slots again: the
 * slots are read at once, which subscribes on the new owner.
 */
function watchShardedSubscriptions(subscriber: Cluster, driver: RedisDriver): void {
  subscriber.on('subscribersReady', () => driver.nudgeAll())
  subscriber.on('nodeError', (error: unknown) => {
    if (error instanceof Error && /\bsunsubscribe\b/.test(error.message)) subscriber.refreshSlotsCache()
  })
}

/** The server's major version (a cluster answers from one of its nodes; all run one version). */
async function majorVersion(client: RedisClient): Promise<number> {
  const info = await client.info('server')
  return Number(/^redis_version:(\d+)/m.exec(info)?.[1] ?? 0)
}

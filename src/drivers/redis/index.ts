import type {
  AcquireRequest, AcquireResult, Capabilities, Driver, DriverFactory, DriverOptions, ExtendResult,
  HoldMode, HoldRef, HolderSummary, ListPage, LockInfo, LockKind, LockSpec, Wake, WaiterSummary,
} from '../../core/driver.js'
import { inspectInOrder, limitOf, namesOfPage } from '../../core/list.js'
import { inspect } from 'node:util'
import { backendUnavailable, invalidArgument, isBatonError } from '../../core/errors.js'
import { weightField, weightOf } from '../../core/compat.js'
import type { StoreUrl } from '../../core/url.js'
import { WakeRoutes } from '../../core/wake-routes.js'
import type { Cluster } from 'ioredis'
import { openClient, redisTarget, type RedisClient, type RedisTarget } from './connection.js'
import { baseKey, nameOfKey, scanPattern, shardedWakeChannelPrefix, slotOfName, wakeChannelPrefix } from './keys.js'
import { loadScripts, Scripts, type ScriptName } from './scripts.js'
import { replicaAcksFor, replicaPolicyOf, type AckedStore, type ReplicaAcks } from './replicas.js'

const CAPABILITIES: Capabilities = {
  fair: true, rwlock: true, semaphore: true, lockDelay: true, handoff: true, durableTokens: false,
}

const MODE_LETTER: Record<HoldMode, string> = { exclusive: 'x', read: 'r', write: 'w', permit: 'p' }
const LETTER_MODE: Record<string, HoldMode> = { x: 'exclusive', r: 'read', w: 'write', p: 'permit' }
const LETTER_KIND: Record<string, LockKind> = { x: 'mutex', r: 'rwlock', w: 'rwlock', p: 'semaphore' }

/**
 * "<mode letter>[permits][*weight][f]": how a hold's spec travels inside the
 * store (see scripts/basics.lua). The weight is written only when above 1,
 * so unweighted permits keep the layout earlier versions read.
 */
function specOf(spec: LockSpec): string {
  if (spec.mode === 'exclusive') return spec.fair ? 'xf' : 'x'
  const weight = spec.kind === 'semaphore' && weightOf(spec) > 1 ? `*${weightOf(spec)}` : ''
  return `${MODE_LETTER[spec.mode]}${spec.kind === 'semaphore' ? spec.permits : ''}${weight}${spec.fair ? 'f' : ''}`
}

/** The weight inside a spec string ("p8*3f" → 3); 1 when it has none. */
function weightInSpec(spec: string): number {
  const weight = /\*(\d+)/.exec(spec)?.[1]
  return weight === undefined ? 1 : Number(weight)
}

/** A hold's member string in the store (the Redlock line node's release matches it too). */
export function memberOf(hold: HoldRef): string {
  return `${hold.owner}|${specOf(hold)}|${hold.token}|${hold.lockDelayMs}`
}

/**
 * Redis (single, Sentinel, Cluster). Each operation is one Lua script, one
 * round trip; a release hands the name to the next in line inside the same
 * script and publishes to that waiter's client only.
 */
export class RedisDriver implements Driver {
  readonly store = 'redis'
  readonly capabilities = CAPABILITIES
  private readonly scripts: Scripts
  private readonly routes = new WakeRoutes()
  private readonly channelPrefix: string
  /**
   * The fencing counter's clock floor is the store clock rounded down to
   * this many µs (acquire.lua ARGV[5]). 1 here; the Redlock driver sets
   * 1000 on its nodes so that their tokens agree in the common case.
   */
  tokenClockUnitUs = 1
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
  batchScripts = true

  // [replicas hook] `?replicas=N`: grants and renewals wait for the replicas (replicas.ts); set at connect.
  replicaAcks: ReplicaAcks | undefined

  constructor(
    private readonly client: RedisClient,
    private readonly subscriber: RedisClient,
    private readonly target: RedisTarget,
    readonly clientId: string,
    private readonly fenceTtlMs: number,
    /** Redis Cluster >= 7: wake-ups by SPUBLISH on per-slot channels (see keys.ts). */
    readonly sharded = false,
  ) {
    this.scripts = new Scripts(client)
    this.channelPrefix = wakeChannelPrefix(target.keyPrefix)
    const onMessage = (channel: string, message: string): void => {
      if (channel.includes(NOTICE_MARK)) this.notices(channel)
      else this.routes.dispatch(message)
    }
    subscriber.on('message', onMessage)
    subscriber.on('smessage', onMessage)
  }

  get wakeChannel(): string {
    return this.channelPrefix + this.clientId
  }

  /** Where scripts publish wake-ups for `name`'s waiters and holders. */
  private channelFor(name: string): string {
    return this.sharded ? shardedWakeChannelPrefix(this.target.keyPrefix, slotOfName(name)) : this.channelPrefix
  }

  /** Sharded mode: the subscription of each slot used: true once active, or while it is made. */
  private readonly slots = new Map<number, true | Promise<void>>()

  /**
   * Sharded mode: subscribes to this client's channel for the slot of `name`
   * once, before the first attempt on that slot is sent, so no wake-up
   * published for that attempt can come before the subscription. A failed
   * subscription is tried again by the next attempt; the retry timers cover
   * the attempts in between.
   */
  private slotReady(name: string): true | Promise<void> {
    const slot = slotOfName(name)
    const known = this.slots.get(slot)
    if (known) return known
    const subscribing = this.subscriber.ssubscribe(shardedWakeChannelPrefix(this.target.keyPrefix, slot) + this.clientId).then(
      () => {
        this.slots.set(slot, true)
      },
      () => {
        this.slots.delete(slot)
      },
    )
    this.slots.set(slot, subscribing)
    return subscribing
  }

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

  /** Sends again the give-backs that failed for want of a connection (the command connection is ready again). */
  resendGiveBacks(): void {
    const pending = [...this.giveBacks.values()]
    this.giveBacks.clear()
    for (const hold of pending) this.release(hold).catch(() => {})
  }

  async acquire(request: AcquireRequest): Promise<AcquireResult> {
    if (this.giveBacks.size > 0) this.giveBacks.delete(`${request.owner}\0${request.name}`)
    if (this.releasing.size > 0) {
      const release = this.releasing.get(`${request.owner}\0${request.name}`)
      if (release) await release.catch(() => {})
    }
    if (this.sharded) {
      const ready = this.slotReady(request.name)
      if (ready !== true) await ready
    }
    // Every attempt is the same script whether or not it is a retry: the
    // script itself recognises an owner that already holds or waits. What
    // only its slow path reads travels as one argument (acquire.lua).
    const slow = `${request.enqueue ? 1 : 0}|${Math.ceil(request.queueTtlMs)}|${this.fenceTtlMs}|${this.channelFor(request.name)}`
    const argv: (string | number)[] = [
      baseKey(this.target.keyPrefix, request.name), request.owner, specOf(request), request.ttlMs, request.lockDelayMs,
      this.tokenClockUnitUs, slow,
    ]
    const note = noteOf(request.description, request.value)
    if (note !== undefined) argv.push(note)
    const reply = (await this.runArgv('acquire', request.name, argv)) as string | [number, number | string, string | null, number | null]
    // The fast path answers the token alone, for the ttl asked (acquire.lua).
    if (typeof reply === 'string') return this.granted(request, { status: 'granted', token: BigInt(reply), ttlMs: request.ttlMs })
    const [status] = reply
    if (status === 1) return this.granted(request, { status: 'granted', token: BigInt(reply[1]), ttlMs: Number(reply[2]) })
    if (status === -1) return { status: 'conflict', detail: String(reply[1]) }
    const holder = reply[2] ? parseHolder(reply[2], Number(reply[3])) : undefined
    return { status: 'busy', retryAfterMs: Number(reply[1]), ...(holder ? { holder } : {}) }
  }

  // [replicas hook] A grant counts once the replicas acknowledged it (replicas.ts).
  private granted(request: AcquireRequest, result: Extract<AcquireResult, { status: 'granted' }>): AcquireResult | Promise<AcquireResult> {
    return this.replicaAcks ? this.replicaAcks.confirmGrant(request, result) : result
  }

  async extend(holds: readonly HoldRef[], ttlMs: number): Promise<ExtendResult[]> {
    // [replicas hook] Renewals count once the replicas acknowledged them (replicas.ts).
    if (this.replicaAcks) return this.replicaAcks.extend(holds, ttlMs)
    // Issued together: ioredis' auto-pipelining sends them in one write per node.
    const replies = await Promise.all(
      holds.map((hold) => this.runArgv('extend', hold.name, [baseKey(this.target.keyPrefix, hold.name), memberOf(hold), ttlMs, hold.lockDelayMs])),
    )
    return replies.map((ttl) => (Number(ttl) > 0 ? { status: 'extended', ttlMs: Number(ttl) } : { status: 'lost' }))
  }

  /**
   * `guess` (the Redlock driver): the hold's token is a guess; where it does
   * not match, the owner's hold is ended whatever its token (release.lua's
   * ARGV[5]). A hold known by its token is released without it, as always.
   */
  async release(hold: HoldRef | (LockSpec & { owner: string }), guess = false): Promise<boolean> {
    const member = 'token' in hold ? memberOf(hold) : ''
    // Another client's hold (a lock server releasing a lease another server granted): its client is told.
    const foreign = hold.owner.startsWith(`${this.clientId}.`) ? 0 : 1
    const argv: (string | number)[] = [
      baseKey(this.target.keyPrefix, hold.name), member, hold.owner, this.fenceTtlMs, this.channelFor(hold.name),
      guess && member !== '' ? 1 : 0, this.tokenClockUnitUs, foreign,
    ]
    // Where the script's fast path may apply, the counter it leaves (release.lua ARGV[8]).
    if ('token' in hold && foreign === 0 && hold.lockDelayMs === 0 && (hold.mode === 'exclusive' || hold.mode === 'write')) argv.push(`${hold.token}|-`)
    const key = `${hold.owner}\0${hold.name}`
    this.giveBacks.delete(key)
    const sent = this.runArgv('release', hold.name, argv)
    this.releasing.set(key, sent)
    try {
      return Number(await sent) === 1
    } catch (error) {
      if (!('token' in hold) && isBatonError(error, 'BACKEND_UNAVAILABLE') && !this.closed) this.giveBacks.set(key, hold)
      throw error
    } finally {
      if (this.releasing.get(key) === sent) this.releasing.delete(key)
    }
  }

  async downgrade(hold: HoldRef): Promise<boolean> {
    const read: HoldRef = { ...hold, mode: 'read' }
    return Number(await this.call('downgrade', hold.name, [memberOf(hold), memberOf(read), this.channelFor(hold.name), this.fenceTtlMs])) === 1
  }

  /** Tells every watched owner to try again now (wake-ups may have been missed), and every observer to look. */
  nudgeAll(): void {
    this.routes.nudgeAll()
    for (const observers of this.observers.values()) for (const onChange of observers) onChange()
  }

  async proclaim(hold: HoldRef, value: string): Promise<boolean> {
    return Number(await this.call('proclaim', hold.name, [memberOf(hold), value, this.channelFor(hold.name)])) === 1
  }

  /** Election observers by notice channel; one subscription per channel in use. */
  private readonly observers = new Map<string, Set<() => void>>()

  /** The names observed here, each renewing its "observed" mark in the store (observe.lua) until its last observer leaves. */
  private readonly marks = new Map<string, NodeJS.Timeout>()

  /**
   * The scripts publish on "<wake-up channel prefix>=<base key>" when a
   * hold carrying a value (a leader's) is granted, handed over, released,
   * proclaimed or forced, and so for any exclusive hold while the name is
   * marked observed (scripts/basics.lua): a plain mutex's holder is a
   * leader to observe() too. Expiry is passive in Redis (no script runs),
   * so the core also reads again at the leader's lease end.
   */
  observe(name: string, onChange: () => void): () => void {
    const channel = `${this.channelFor(name)}${NOTICE_MARK}${baseKey(this.target.keyPrefix, name)}`
    let set = this.observers.get(channel)
    const entry = () => onChange()
    if (!set) {
      this.observers.set(channel, (set = new Set()))
      const mark = () => this.call('observe', name, [OBSERVED_MARK_MS])
      this.marks.set(channel, setInterval(() => mark().catch(() => {}), OBSERVED_MARK_MS / 3).unref())
      // Once subscribed and marked, a look: a change between the caller's first read and then is not missed.
      const subscribed = this.sharded ? this.subscriber.ssubscribe(channel) : this.subscriber.subscribe(channel)
      Promise.allSettled([subscribed, mark()]).then(() => this.notices(channel))
    }
    set.add(entry)
    return () => {
      set.delete(entry)
      if (set.size > 0 || this.observers.get(channel) !== set) return
      this.observers.delete(channel)
      clearInterval(this.marks.get(channel))
      this.marks.delete(channel)
      const dropped = this.sharded ? this.subscriber.sunsubscribe(channel) : this.subscriber.unsubscribe(channel)
      dropped.catch(() => {})
    }
  }

  /** The observer channels to subscribe again after a reconnect. */
  observedChannels(): string[] {
    return [...this.observers.keys()]
  }

  private notices(channel: string): void {
    for (const onChange of this.observers.get(channel) ?? []) onChange()
  }

  watch(_name: string, owner: string, onWake: (wake: Wake) => void): () => void {
    // [replicas hook] A hand-over is confirmed by the new holder's next attempt (replicas.ts).
    return this.routes.watch(owner, this.replicaAcks ? this.replicaAcks.deferGrants(onWake) : onWake)
  }

  async inspect(name: string): Promise<LockInfo | null> {
    const [now, lastToken, holders, line] = (await this.call('inspect', name, [])) as [number, string, string[], string[]]
    const summaries: HolderSummary[] = []
    for (let i = 0; i < holders.length; i += 4) {
      summaries.push(described(parseHolder(holders[i]!, Number(holders[i + 1]), true), holders[i + 2]!, holders[i + 3]!))
    }
    const live = summaries.filter((h) => h.expiresAt > now)
    const waiters: (WaiterSummary & { spec: string })[] = []
    for (let i = 0; i < line.length; i += 2) {
      const info = line[i + 1]!
      const [spec = '', , , staleAt = '0', since = ''] = info.split('|', 5)
      const description = info.split('|').slice(5).join('|')
      const mode = LETTER_MODE[spec[0]!] ?? 'exclusive'
      if (Number(staleAt) > now) waiters.push(described({ owner: line[i]!, mode, ...weightField(mode, weightInSpec(spec)), spec }, since, description))
    }
    if (summaries.length === 0 && waiters.length === 0) return null
    const spec = holders[0]?.split('|')[1] ?? waiters[0]!.spec
    const permits = /^\D(\d+)/.exec(spec)?.[1]
    return {
      name,
      kind: LETTER_KIND[spec[0]!] ?? 'mutex',
      fair: spec.endsWith('f'),
      permits: permits === undefined ? 1 : Number(permits),
      holders: live,
      waiters: waiters.map(({ spec: _, ...waiter }) => waiter),
      lastToken: BigInt(lastToken),
    }
  }

  /**
   * SCAN is unordered and has no range, so a page can not be read in order
   * from Redis: the names under the prefix are collected with SCAN (key names
   * only, cheap), sorted here, and only the page's names are inspected, in
   * order, until the page is full. A page of 50 of 10,000 locks is then one
   * SCAN pass and about 50 inspects, instead of 10,000 inspects.
   */
  async *list(prefix: string, page?: ListPage): AsyncIterable<LockInfo> {
    const names = namesOfPage(await this.names(prefix), prefix, page)
    yield* inspectInOrder(names, limitOf(page), (name) => this.inspect(name))
  }

  /** Names with keys under `prefix` (in use or not), unordered, by SCAN on every master. */
  async names(prefix: string): Promise<Set<string>> {
    const names = new Set<string>()
    const nodes = 'nodes' in this.client ? this.client.nodes('master') : [this.client]
    try {
      for (const node of nodes) {
        let cursor = '0'
        do {
          const [next, keys] = await node.scan(cursor, 'MATCH', scanPattern(this.target.keyPrefix, prefix), 'COUNT', 1000)
          cursor = next
          // A name whose only key is its hold key may be idle: the key then
          // keeps just the fencing counter (for fenceTtl) and lists nothing.
          // Those are read in one pipeline, so idle names are not inspected.
          const holdOnly = new Map<string, string>()
          for (const key of keys) {
            const name = nameOfKey(this.target.keyPrefix, key)
            if (name === undefined || names.has(name)) continue
            if (key.endsWith('}:x')) holdOnly.set(name, key)
            else names.add(name)
          }
          for (const name of names) holdOnly.delete(name)
          if (holdOnly.size > 0) {
            const pipeline = node.pipeline()
            for (const key of holdOnly.values()) pipeline.get(key)
            const values = (await pipeline.exec()) ?? []
            let i = 0
            for (const name of holdOnly.keys()) {
              const [error, value] = values[i++] ?? [null, null]
              if (error || (typeof value === 'string' && !FREE_HOLD_KEY.test(value))) names.add(name)
            }
          }
        } while (cursor !== '0')
      }
    } catch (cause) {
      throw backendUnavailable(`redis store at ${this.target.display}`, cause)
    }
    return names
  }

  async forceRelease(name: string): Promise<boolean> {
    return Number(await this.call('forceRelease', name, [this.channelFor(name), this.fenceTtlMs])) > 0
  }

  private closed = false

  async close(): Promise<void> {
    this.closed = true
    this.giveBacks.clear()
    this.routes.clear()
    this.observers.clear()
    for (const timer of this.marks.values()) clearInterval(timer)
    this.marks.clear()
    await Promise.allSettled([this.client.quit(), this.subscriber.quit()])
    this.client.disconnect()
    this.subscriber.disconnect()
  }

  /** The fence ttl this node's scripts are given (the Redlock line node's release needs it). */
  get fenceTtl(): number {
    return this.fenceTtlMs
  }

  // [replicas hook] What replicas.ts needs of this driver: connection, scripts, extend's arguments, give-back.
  ackedStore(): AckedStore {
    return {
      client: this.client,
      scripts: this.scripts,
      display: this.target.display,
      extendArgv: (hold, ttlMs) => [baseKey(this.target.keyPrefix, hold.name), memberOf(hold), ttlMs, hold.lockDelayMs],
      giveBack: (hold) => this.release(hold),
    }
  }

  /** For drivers built from several Redis nodes (redlock): this node's command connection. */
  get connection(): RedisClient {
    return this.client
  }

  /** Runs a script on `name` (its one key, the name's base) with `args`. */
  call(script: ScriptName, name: string, args: (string | number)[]): Promise<unknown> {
    return this.runArgv(script, name, [baseKey(this.target.keyPrefix, name), ...args])
  }

  private async runArgv(script: ScriptName, name: string, argv: (string | number)[]): Promise<unknown> {
    try {
      try {
        return await this.scripts.runArgv(script, argv, this.batchScripts)
      } catch (error) {
        const again = this.scripts.recover(error, script, argv)
        if (!again) throw error
        return await again
      }
    } catch (cause) {
      if (isForeign(cause)) {
        throw invalidArgument(
          `the Redis keys of "${name}" (${this.target.keyPrefix}:{${name}}:*) hold a value baton did not write ` +
            `(${foreignDetail(cause)}); another program uses them: pick another name or "prefix", or clear them with forceRelease("${name}")`,
          cause,
        )
      }
      throw backendUnavailable(`redis store at ${this.target.display}`, cause)
    }
  }

  /** util.inspect(baton) must show neither the password nor the clients' options. */
  [inspect.custom](): string {
    return `RedisDriver { ${this.target.display} }`
  }
}

/** The hold key of a name nobody holds: only the fencing counter (scripts/basics.lua). */
const FREE_HOLD_KEY = /^\d+\|[-s]$/

/** A script found keys of a name holding what baton did not write (FOREIGN), or a command hit one (WRONGTYPE). */
function isForeign(cause: unknown): cause is Error {
  return cause instanceof Error && cause.name === 'ReplyError' && /^(FOREIGN|WRONGTYPE)\b/.test(cause.message)
}

function foreignDetail(cause: Error): string {
  return cause.message.replace(/^FOREIGN /, '').replace(/ script: .*$/s, '')
}

/**
 * What the store keeps as a hold's or line entry's note: the description,
 * and for a leader election's candidate "\0" and its value (the scripts
 * publish to the name's observers for such holds; scripts/basics.lua).
 */
function noteOf(description: string | undefined, value: string | undefined): string | undefined {
  return value === undefined ? description : `${description ?? ''}\0${value}`
}

/**
 * How long a name stays marked observed without its observers' renewal
 * (every third of it). A client gone without unobserving leaves its names
 * on the slow paths that long at most.
 */
const OBSERVED_MARK_MS = 60_000

/** Marks an election observers' channel apart from the clients' wake-up channels (client ids have no "="). */
const NOTICE_MARK = '='

/** A summary with the since, description and value the store keeps ("" where it has none). */
function described<T extends HolderSummary | WaiterSummary>(summary: T, since: string, note: string): T {
  const cut = note.indexOf('\0')
  const description = cut < 0 ? note : note.slice(0, cut)
  return {
    ...summary,
    ...(description !== '' ? { description } : {}),
    ...(since !== '' ? { since: Number(since) } : {}),
    ...(cut >= 0 && 'token' in summary ? { value: note.slice(cut + 1) } : {}),
  }
}

/** A holders member ("owner|spec|token|delay") and its score → a summary. */
function parseHolder(member: string, score: number, scoreIncludesDelay = false): HolderSummary {
  const [owner = '', spec = 'x', token = '0', delay = '0'] = member.split('|')
  const mode = LETTER_MODE[spec[0]!] ?? 'exclusive'
  return {
    owner,
    token: BigInt(token),
    mode,
    ...weightField(mode, weightInSpec(spec)),
    expiresAt: scoreIncludesDelay ? score - Number(delay) : score,
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
    // A give-back the connection could not carry goes once it is back (RedisDriver.release).
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

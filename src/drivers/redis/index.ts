import type {
  AcquireRequest, AcquireResult, Capabilities, Driver, DriverFactory, DriverOptions, ExtendResult,
  HoldMode, HoldRef, HolderSummary, LockInfo, LockKind, LockSpec, Wake,
} from '../../core/driver.js'
import { inspect } from 'node:util'
import { backendUnavailable, invalidArgument } from '../../core/errors.js'
import type { StoreUrl } from '../../core/url.js'
import { WakeRoutes } from '../../core/wake-routes.js'
import { openClient, redisTarget, type RedisClient, type RedisTarget } from './connection.js'
import { lockKeys, nameOfKey, scriptArgv, scanPattern, shardedWakeChannelPrefix, slotOfName, wakeChannelPrefix } from './keys.js'
import { loadScripts, Scripts, type ScriptName } from './scripts.js'

const CAPABILITIES: Capabilities = {
  fair: true, rwlock: true, semaphore: true, lockDelay: true, handoff: true, durableTokens: false,
}

const MODE_LETTER: Record<HoldMode, string> = { exclusive: 'x', read: 'r', write: 'w', permit: 'p' }
const LETTER_MODE: Record<string, HoldMode> = { x: 'exclusive', r: 'read', w: 'write', p: 'permit' }
const LETTER_KIND: Record<string, LockKind> = { x: 'mutex', r: 'rwlock', w: 'rwlock', p: 'semaphore' }

/** "<mode letter>[permits][f]": how a hold's spec travels inside the store (see scripts/basics.lua). */
function specOf(spec: LockSpec): string {
  return `${MODE_LETTER[spec.mode]}${spec.kind === 'semaphore' ? spec.permits : ''}${spec.fair ? 'f' : ''}`
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
   * this many µs (acquire.lua ARGV[10]). 1 here; the Redlock driver sets
   * 1000 on its nodes so that their tokens agree in the common case.
   */
  tokenClockUnitUs = 1

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
    const onMessage = (_channel: string, message: string): void => this.routes.dispatch(message)
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

  async acquire(request: AcquireRequest): Promise<AcquireResult> {
    if (this.sharded) {
      const ready = this.slotReady(request.name)
      if (ready !== true) await ready
    }
    // Every attempt is the same script whether or not it is a retry: the
    // script itself recognises an owner that already holds or waits.
    const reply = (await this.call('acquire', request.name, [
      request.owner, specOf(request), request.ttlMs, request.lockDelayMs,
      request.enqueue ? 1 : 0, Math.ceil(request.queueTtlMs),
      request.name, this.channelFor(request.name), this.fenceTtlMs, this.tokenClockUnitUs,
    ])) as [number, number | string, string | null, number | null]
    const [status] = reply
    if (status === 1) return { status: 'granted', token: BigInt(reply[1]), ttlMs: Number(reply[2]) }
    if (status === -1) return { status: 'conflict', detail: String(reply[1]) }
    const holder = reply[2] ? parseHolder(reply[2], Number(reply[3])) : undefined
    return { status: 'busy', retryAfterMs: Number(reply[1]), ...(holder ? { holder } : {}) }
  }

  async extend(holds: readonly HoldRef[], ttlMs: number): Promise<ExtendResult[]> {
    // Issued together: ioredis' auto-pipelining sends them in one write per node.
    const replies = await Promise.all(
      holds.map((hold) => {
        const keys = lockKeys(this.target.keyPrefix, hold.name)
        return this.run('extend', hold.name, [keys.exclusive, keys.shared], [memberOf(hold), ttlMs, hold.lockDelayMs])
      }),
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
    const args = [member, hold.owner, this.channelFor(hold.name), this.fenceTtlMs]
    if (guess && member !== '') args.push(1)
    return Number(await this.call('release', hold.name, args)) === 1
  }

  async downgrade(hold: HoldRef): Promise<boolean> {
    const read: HoldRef = { ...hold, mode: 'read' }
    return Number(await this.call('downgrade', hold.name, [memberOf(hold), memberOf(read), this.channelFor(hold.name), this.fenceTtlMs])) === 1
  }

  /** Tells every watched owner to try again now (wake-ups may have been missed). */
  nudgeAll(): void {
    this.routes.nudgeAll()
  }

  watch(_name: string, owner: string, onWake: (wake: Wake) => void): () => void {
    return this.routes.watch(owner, onWake)
  }

  async inspect(name: string): Promise<LockInfo | null> {
    const [now, lastToken, holders, line] = (await this.call('inspect', name, [])) as [number, string, string[], string[]]
    const summaries: HolderSummary[] = []
    for (let i = 0; i < holders.length; i += 2) summaries.push(parseHolder(holders[i]!, Number(holders[i + 1]), true))
    const live = summaries.filter((h) => h.expiresAt > now)
    const waiters: { owner: string; mode: HoldMode; spec: string }[] = []
    for (let i = 0; i < line.length; i += 2) {
      const [spec = '', , , staleAt = '0'] = line[i + 1]!.split('|')
      if (Number(staleAt) > now) waiters.push({ owner: line[i]!, mode: LETTER_MODE[spec[0]!] ?? 'exclusive', spec })
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
      waiters: waiters.map(({ owner, mode }) => ({ owner, mode })),
      lastToken: BigInt(lastToken),
    }
  }

  async *list(prefix: string): AsyncIterable<LockInfo> {
    const names = new Set<string>()
    const nodes = 'nodes' in this.client ? this.client.nodes('master') : [this.client]
    try {
      for (const node of nodes) {
        let cursor = '0'
        do {
          const [next, keys] = await node.scan(cursor, 'MATCH', scanPattern(this.target.keyPrefix, prefix), 'COUNT', 1000)
          cursor = next
          for (const key of keys) {
            const name = nameOfKey(this.target.keyPrefix, key)
            if (name !== undefined) names.add(name)
          }
        } while (cursor !== '0')
      }
    } catch (cause) {
      throw backendUnavailable(`redis store at ${this.target.display}`, cause)
    }
    for (const name of [...names].sort()) {
      const info = await this.inspect(name)
      if (info) yield info
    }
  }

  async forceRelease(name: string): Promise<boolean> {
    return Number(await this.call('forceRelease', name, [this.channelFor(name)])) > 0
  }

  async close(): Promise<void> {
    this.routes.clear()
    await Promise.allSettled([this.client.quit(), this.subscriber.quit()])
    this.client.disconnect()
    this.subscriber.disconnect()
  }

  /** For drivers built from several Redis nodes (redlock): runs one of SCRIPTS on this node. */
  script(script: ScriptName, name: string, keys: string[], args: (string | number)[]): Promise<unknown> {
    return this.run(script, name, keys, args)
  }

  /** For drivers built from several Redis nodes (redlock): this node's command connection. */
  get connection(): RedisClient {
    return this.client
  }

  /** Runs a script that takes all five keys of `name`. */
  private call(script: ScriptName, name: string, args: (string | number)[]): Promise<unknown> {
    return this.runArgv(script, name, scriptArgv(this.target.keyPrefix, name, args))
  }

  private run(script: ScriptName, name: string, keys: string[], args: (string | number)[]): Promise<unknown> {
    return this.runArgv(script, name, [...keys, ...args])
  }

  private async runArgv(script: ScriptName, name: string, argv: (string | number)[]): Promise<unknown> {
    try {
      return await this.scripts.runArgv(this.client, script, argv)
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

/** A script found keys of a name holding what baton did not write (FOREIGN), or a command hit one (WRONGTYPE). */
function isForeign(cause: unknown): cause is Error {
  return cause instanceof Error && cause.name === 'ReplyError' && /^(FOREIGN|WRONGTYPE)\b/.test(cause.message)
}

function foreignDetail(cause: Error): string {
  return cause.message.replace(/^FOREIGN /, '').replace(/ script: .*$/s, '')
}

/** A holders member ("owner|spec|token|delay") and its score → a summary. */
function parseHolder(member: string, score: number, scoreIncludesDelay = false): HolderSummary {
  const [owner = '', spec = 'x', token = '0', delay = '0'] = member.split('|')
  return {
    owner,
    token: BigInt(token),
    mode: LETTER_MODE[spec[0]!] ?? 'exclusive',
    expiresAt: scoreIncludesDelay ? score - Number(delay) : score,
  }
}

export const createRedisDriver: DriverFactory = async (url: StoreUrl, options: DriverOptions) => {
  const target = redisTarget(url, options)
  loadScripts()
  const client = await openClient(target, options.connectTimeoutMs)
  let subscriber: RedisClient
  try {
    const sharded = target.cluster && (await majorVersion(client)) >= 7
    subscriber = await openClient(target, options.connectTimeoutMs, sharded ? 'sharded-subscriber' : 'subscriber')
    const driver = new RedisDriver(client, subscriber, target, options.clientId, Math.ceil(options.fenceTtlMs), sharded)
    if (sharded) return driver
    await subscriber.subscribe(driver.wakeChannel)
    // After a reconnect (or failover, or CLIENT KILL TYPE pubsub): wake-ups
    // sent meanwhile are lost. Once subscribed again, every waiter checks at
    // once (a hand-over it missed is found by its attempt) instead of
    // sleeping until its retry timer.
    subscriber.on('ready', () => {
      subscriber.subscribe(driver.wakeChannel).then(() => driver.nudgeAll(), () => {})
    })
    return driver
  } catch (cause) {
    client.disconnect()
    throw backendUnavailable(`redis store at ${target.display}`, cause)
  }
}

/** The server's major version (a cluster answers from one of its nodes; all run one version). */
async function majorVersion(client: RedisClient): Promise<number> {
  const info = await client.info('server')
  return Number(/^redis_version:(\d+)/m.exec(info)?.[1] ?? 0)
}

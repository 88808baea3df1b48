import { readFileSync } from 'node:fs'
import type { ConnectionOptions } from 'node:tls'
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis'
import type { DriverOptions } from '../../core/driver.js'
import { backendUnavailable, invalidArgument, unauthorized } from '../../core/errors.js'
import type { StoreUrl } from '../../core/url.js'
import { tuneCommandConnection } from './command-deadlines.js'

export type RedisClient = Redis | Cluster

/** A subscriber resubscribes itself (see create); a sharded one (cluster only) has one connection per shard. */
type Role = 'subscriber' | 'sharded-subscriber'

export interface RedisTarget {
  /**
   * Makes a new connection (or cluster client) to the same store. A
   * subscriber does not resubscribe by itself: ioredis' own resubscription
   * leaves a rejected promise unhandled when the connection closes meanwhile,
   * so the driver resubscribes on 'ready' instead.
   */
  create(role?: Role): RedisClient
  /** redis+cluster:// */
  readonly cluster: boolean
  /** Key prefix, `?prefix=` in the URL, default "baton". */
  readonly keyPrefix: string
  readonly display: string
  /** The URL's user, for authentication messages ("default" when it names none). */
  readonly user: string
  /** The database number of redis:// and rediss:// URLs (0 when absent). */
  readonly db: number
}

const DEFAULT_PORT = 6379
const DEFAULT_SENTINEL_PORT = 26379

/**
 * URL → ioredis client settings for the four forms:
 * redis://[user:pass@]host:port[/db], rediss://…[?ca=/path/ca.pem] (TLS),
 * redis+sentinel://h1:p,h2:p/mastername, redis+cluster://h1:p,h2:p.
 */
export function redisTarget(url: StoreUrl, options: DriverOptions): RedisTarget {
  const keyPrefix = url.params.get('prefix') ?? 'baton'
  if (!/^[\w.-]{1,64}$/.test(keyPrefix)) throw invalidArgument(`"prefix" in ${url.display} must be 1-64 letters, digits, '.', '_' or '-'`)
  const common: RedisOptions = {
    lazyConnect: true,
    // Fail a command after one reconnection attempt instead of queueing it for
    // minutes: the core turns the failure into BACKEND_UNAVAILABLE.
    maxRetriesPerRequest: 1,
    connectTimeout: options.connectTimeoutMs,
    commandTimeout: options.commandTimeoutMs,
    retryStrategy: (attempt) => Math.min(50 * attempt, 1000),
    // RESP2, as Redis before 6 speaks and the scripts' replies are written for
    // (ioredis 6 defaults to RESP3, whose push frames a server before 6 lacks).
    protocol: 2,
    ...(url.username ? { username: url.username } : {}),
    ...(url.password ? { password: url.password } : {}),
  }
  const hosts = url.hosts.map((h) => ({ host: h.host, port: h.port ?? DEFAULT_PORT }))
  const named = { keyPrefix, display: url.display, user: url.username ?? 'default', cluster: url.scheme === 'redis+cluster' }
  switch (url.scheme) {
    case 'redis':
    case 'rediss': {
      if (hosts.length !== 1) throw invalidArgument(`${url.display} must name exactly one host; for several use redis+cluster:// or redis+sentinel://`)
      const db = url.path === '' ? 0 : Number(url.path)
      if (!Number.isInteger(db) || db < 0) throw invalidArgument(`the database "${url.path}" in ${url.display} must be a whole number`)
      const settings: RedisOptions = { ...common, ...hosts[0], db, ...(url.scheme === 'rediss' ? { tls: tlsOptions(url) } : {}) }
      return { ...named, db, create: (role) => single(settings, role) }
    }
    case 'redis+sentinel': {
      if (hosts.length === 0 || !url.path) throw invalidArgument(`${url.display} must be redis+sentinel://host:port[,host:port…]/mastername`)
      const sentinels = url.hosts.map((h) => ({ host: h.host, port: h.port ?? DEFAULT_SENTINEL_PORT }))
      const settings: RedisOptions = { ...common, sentinels, name: url.path }
      return { ...named, db: 0, create: (role) => single(settings, role) }
    }
    case 'redis+cluster': {
      if (hosts.length === 0) throw invalidArgument(`${url.display} must name at least one cluster node`)
      const settings: ClusterOptions = {
        lazyConnect: true,
        enableAutoPipelining: true,
        // A slot being migrated answers TRYAGAIN for the names it has only
        // part of (the scripts declare every key of a name; see Scripts),
        // each try 100 ms apart: 16 (ioredis' default) spans a short move.
        maxRedirections: 16,
        clusterRetryStrategy: (attempt) => Math.min(100 * attempt, 1000),
        redisOptions: { ...common, lazyConnect: false },
      }
      return {
        ...named,
        db: 0,
        create: (role) => new Cluster(hosts, {
          ...settings,
          // ioredis keeps one subscriber per master and resubscribes sharded channels itself.
          ...(role === 'sharded-subscriber' ? { shardedSubscribers: true } : {}),
          redisOptions: role === 'sharded-subscriber' ? settings.redisOptions! : forRole(settings.redisOptions!, role),
        }),
      }
    }
    default:
      throw invalidArgument(`the redis driver does not handle ${url.scheme}://`)
  }
}

/** `rediss://…?ca=/path/ca.pem` trusts a private CA besides the system's. */
function tlsOptions(url: StoreUrl): ConnectionOptions {
  const caPath = url.params.get('ca')
  if (caPath === null) return {}
  try {
    return { ca: readFileSync(caPath) }
  } catch (cause) {
    throw invalidArgument(`"ca" in ${url.display} names a file that can not be read: ${caPath}`, cause)
  }
}

/**
 * A connection to one Redis (direct or through Sentinel). The command
 * connection bounds its commands with one timer (CommandDeadlines) instead
 * of ioredis' timer per command (tuneCommandConnection); a subscriber sends
 * few commands and keeps ioredis' own timeout.
 */
function single(settings: RedisOptions, role?: Role): Redis {
  if (role !== undefined) return new Redis(forRole(settings, role))
  const { commandTimeout, ...rest } = settings
  const client = new Redis(rest)
  tuneCommandConnection(client, commandTimeout)
  return client
}

function forRole(settings: RedisOptions, role?: Role): RedisOptions {
  return role === 'subscriber' ? { ...settings, autoResubscribe: false } : settings
}

/**
 * Connects within the connect timeout, or fails and leaves nothing running:
 * UNAUTHORIZED when the server refused the credentials (or wants some),
 * INVALID_ARGUMENT for a database the server does not have, else
 * BACKEND_UNAVAILABLE.
 */
export async function openClient(target: RedisTarget, timeoutMs: number, role?: Role): Promise<RedisClient> {
  const client = target.create(role)
  // ioredis reports a refused AUTH or SELECT only as 'error' events (and then
  // keeps reconnecting, or goes on in db 0): watch them while connecting.
  // Later errors are reported through the commands that fail; an 'error'
  // event with no listener would crash the process.
  let refused: Error | undefined
  let badDb: Error | undefined
  const onError = (error: Error): void => {
    if (AUTH_ERROR.test(error.message)) refused ??= error
    else if (DB_ERROR.test(error.message)) badDb ??= error
  }
  client.on('error', onError)
  let timer: NodeJS.Timeout | undefined
  try {
    await Promise.race([
      client.connect(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no connection within ${timeoutMs} ms`)), timeoutMs)
      }),
    ])
    if (refused) throw refused
    if (badDb) throw badDb
    return client
  } catch (cause) {
    client.disconnect()
    const failure = refused ?? badDb ?? cause
    if (failure === refused) throw unauthorized(`redis store at ${target.display}`, authProblem(target, refused!), refused)
    if (failure === badDb) throw invalidArgument(await dbProblem(target, client), badDb)
    throw backendUnavailable(`redis store at ${target.display}`, cause)
  } finally {
    clearTimeout(timer)
    client.off('error', onError)
    client.on('error', () => {})
  }
}

const AUTH_ERROR = /^(NOAUTH|WRONGPASS|NOPERM)|invalid password|ERR AUTH|without any password configured/i
const DB_ERROR = /DB index is out of range|SELECT is not allowed/i

function authProblem(target: RedisTarget, error: Error): string {
  if (/^NOAUTH/.test(error.message)) {
    return 'it requires a password and the store URL gives none; use redis://user:password@host (special characters %-escaped or not)'
  }
  return `the user "${target.user}" and the password in the store URL were not accepted (${error.message.split('.')[0]}); check both`
}

/** "db 99 … the server has 16 databases", asking the server for its count when it lets us. */
async function dbProblem(target: RedisTarget, client: RedisClient): Promise<string> {
  let count = ''
  const probe = target.create()
  probe.on('error', () => {})
  try {
    const reply = (await Promise.race([
      probe.connect().then(() => probe.call('CONFIG', 'GET', 'databases')),
      new Promise((resolve) => setTimeout(resolve, 1000, undefined)),
    ])) as string[] | undefined
    if (reply?.[1]) count = ` (it has ${reply[1]}: 0-${Number(reply[1]) - 1})`
  } catch {
    // CONFIG may be disabled (managed Redis): the message goes without the count.
  } finally {
    probe.disconnect()
    client.disconnect()
  }
  return `the database ${target.db} in ${target.display} does not exist on that server${count}; use one it has, or raise "databases" in its redis.conf`
}

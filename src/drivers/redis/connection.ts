import { readFileSync } from 'node:fs'
import type { ConnectionOptions } from 'node:tls'
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis'
import type { DriverOptions } from '../../core/driver.js'
import { backendUnavailable, invalidArgument } from '../../core/errors.js'
import type { StoreUrl } from '../../core/url.js'

export type RedisClient = Redis | Cluster

export interface RedisTarget {
  /**
   * Makes a new connection (or cluster client) to the same store. A
   * subscriber does not resubscribe by itself: ioredis' own resubscription
   * leaves a rejected promise unhandled when the connection closes meanwhile,
   * so the driver resubscribes on 'ready' instead.
   */
  create(role?: 'subscriber'): RedisClient
  /** Key prefix, `?prefix=` in the URL, default "baton". */
  readonly keyPrefix: string
  readonly display: string
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
    ...(url.username ? { username: url.username } : {}),
    ...(url.password ? { password: url.password } : {}),
  }
  const hosts = url.hosts.map((h) => ({ host: h.host, port: h.port ?? DEFAULT_PORT }))
  switch (url.scheme) {
    case 'redis':
    case 'rediss': {
      if (hosts.length !== 1) throw invalidArgument(`${url.display} must name exactly one host; for several use redis+cluster:// or redis+sentinel://`)
      const db = url.path === '' ? 0 : Number(url.path)
      if (!Number.isInteger(db) || db < 0) throw invalidArgument(`the database "${url.path}" in ${url.display} must be a whole number`)
      const settings: RedisOptions = { ...common, ...hosts[0], db, ...(url.scheme === 'rediss' ? { tls: tlsOptions(url) } : {}) }
      return { keyPrefix, display: url.display, create: (role) => new Redis(forRole(settings, role)) }
    }
    case 'redis+sentinel': {
      if (hosts.length === 0 || !url.path) throw invalidArgument(`${url.display} must be redis+sentinel://host:port[,host:port…]/mastername`)
      const sentinels = url.hosts.map((h) => ({ host: h.host, port: h.port ?? DEFAULT_SENTINEL_PORT }))
      const settings: RedisOptions = { ...common, sentinels, name: url.path }
      return { keyPrefix, display: url.display, create: (role) => new Redis(forRole(settings, role)) }
    }
    case 'redis+cluster': {
      if (hosts.length === 0) throw invalidArgument(`${url.display} must name at least one cluster node`)
      const settings: ClusterOptions = {
        lazyConnect: true,
        enableAutoPipelining: true,
        maxRedirections: 8,
        clusterRetryStrategy: (attempt) => Math.min(100 * attempt, 1000),
        redisOptions: { ...common, lazyConnect: false },
      }
      return {
        keyPrefix,
        display: url.display,
        create: (role) => new Cluster(hosts, { ...settings, redisOptions: forRole(settings.redisOptions!, role) }),
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

function forRole(settings: RedisOptions, role?: 'subscriber'): RedisOptions {
  return role === 'subscriber' ? { ...settings, autoResubscribe: false } : settings
}

/** Connects within the connect timeout, or fails with BACKEND_UNAVAILABLE and leaves nothing running. */
export async function openClient(target: RedisTarget, timeoutMs: number, role?: 'subscriber'): Promise<RedisClient> {
  const client = target.create(role)
  // Errors are reported through the commands that fail; an 'error' event with
  // no listener would crash the process.
  client.on('error', () => {})
  let timer: NodeJS.Timeout | undefined
  try {
    await Promise.race([
      client.connect(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no connection within ${timeoutMs} ms`)), timeoutMs)
      }),
    ])
    return client
  } catch (cause) {
    client.disconnect()
    throw backendUnavailable(`redis store at ${target.display}`, cause)
  } finally {
    clearTimeout(timer)
  }
}

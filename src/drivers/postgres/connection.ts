import { readFileSync } from 'node:fs'
import type { ConnectionOptions } from 'node:tls'
import pg from 'pg'
import type { DriverOptions } from '../../core/driver.js'
import { BatonError, backendUnavailable, invalidArgument, unauthorized } from '../../core/errors.js'
import type { StoreUrl } from '../../core/url.js'

export interface PostgresTarget {
  /** Settings for every connection: the pool's and the listener's. */
  readonly client: pg.ClientConfig
  readonly poolSize: number
  /** ?schema=, default "baton": where the tables live. */
  readonly schema: string
  readonly user: string
  readonly database: string
  /** The URL with its password masked. */
  readonly display: string
  /** "postgres store at <display>", for messages. */
  readonly label: string
}

const DEFAULT_PORT = 5432
const DEFAULT_POOL_SIZE = 10
/** Lower-case, so the name never needs quoting by hand; short enough to leave room in channel names (63 bytes). */
const SCHEMA_PATTERN = /^[a-z_][a-z0-9_]{0,39}$/

/**
 * URL → pg settings:
 * postgres[ql]://[user[:password]@]host[:port][/database][?schema=baton]
 * [&sslmode=disable|require|verify-ca|verify-full][&sslrootcert=/path/ca.pem]
 * [&host=/run/postgresql&port=5433 (a unix socket directory, with no host before the path)]
 * [&poolSize=10][&fenceTtl=1h].
 */
export function postgresTarget(url: StoreUrl, options: DriverOptions): PostgresTarget {
  if (url.hosts.length > 1) {
    throw invalidArgument(`${url.display} names ${url.hosts.length} hosts; the postgres store connects to one (put a proxy or a virtual IP in front of a cluster)`)
  }
  const schema = url.params.get('schema') ?? 'baton'
  if (!SCHEMA_PATTERN.test(schema)) {
    throw invalidArgument(`"schema" in ${url.display} must be 1-40 lower-case letters, digits or '_', not starting with a digit`)
  }
  if (url.path.includes('/')) {
    throw invalidArgument(`the database "${url.path}" in ${url.display} must be a single name (postgres://host:port/database)`)
  }
  const poolSize = parsePoolSize(url)
  const address = url.hosts[0]
  const socketOrHost = url.params.get('host')
  if (address && (socketOrHost !== null || url.params.has('port'))) {
    throw invalidArgument(`${url.display} names its host twice; give host:port before the path, or ?host=&port= with nothing there`)
  }
  const user = url.username ?? process.env.PGUSER ?? 'postgres'
  const database = url.path || user
  const client: pg.ClientConfig = {
    host: address?.host ?? socketOrHost ?? undefined,
    port: address?.port ?? parsePort(url),
    user,
    database,
    ...(url.password !== undefined ? { password: url.password } : {}),
    ssl: sslOptions(url),
    application_name: 'baton',
    connectionTimeoutMillis: options.connectTimeoutMs,
    query_timeout: options.commandTimeoutMs,
    // A server gone without a word (a partition, a VM stopped) is noticed by
    // the idle LISTEN connection after about 10 s plus the kernel's probes.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  }
  return { client, poolSize, schema, user, database, display: url.display, label: `postgres store at ${url.display}` }
}

function parsePort(url: StoreUrl): number {
  const raw = url.params.get('port')
  if (raw === null) return DEFAULT_PORT
  const port = Number(raw)
  if (!/^\d+$/.test(raw) || port < 1 || port > 65535) throw invalidArgument(`"port" in ${url.display} must be 1-65535, got ${JSON.stringify(raw)}`)
  return port
}

function parsePoolSize(url: StoreUrl): number {
  const raw = url.params.get('poolSize')
  if (raw === null) return DEFAULT_POOL_SIZE
  const size = Number(raw)
  if (!/^\d+$/.test(raw) || size < 1 || size > 1000) {
    throw invalidArgument(`"poolSize" in ${url.display} must be a whole number from 1 to 1000, got ${JSON.stringify(raw)}`)
  }
  return size
}

/** libpq's sslmode values, as far as node's TLS can honour them. */
function sslOptions(url: StoreUrl): false | ConnectionOptions {
  const mode = url.params.get('sslmode') ?? 'disable'
  const ca = readCa(url)
  switch (mode) {
    case 'disable':
      return false
    case 'require': // encrypted, server not verified (as libpq without a root certificate)
      return { rejectUnauthorized: false }
    case 'verify-ca': // signed by a trusted CA, any host name
      return { ...ca, rejectUnauthorized: true, checkServerIdentity: () => undefined }
    case 'verify-full':
      return { ...ca, rejectUnauthorized: true }
    case 'prefer':
    case 'allow':
      throw invalidArgument(`sslmode=${mode} in ${url.display} would fall back to an unencrypted connection, which this client can not do; use sslmode=disable or sslmode=require`)
    default:
      throw invalidArgument(`"sslmode" in ${url.display} must be disable, require, verify-ca or verify-full, got ${JSON.stringify(mode)}`)
  }
}

function readCa(url: StoreUrl): { ca?: Buffer } {
  const path = url.params.get('sslrootcert')
  if (path === null) return {}
  try {
    return { ca: readFileSync(path) }
  } catch (cause) {
    throw invalidArgument(`"sslrootcert" in ${url.display} names a file that can not be read: ${path}`, cause)
  }
}

/** SQLSTATE of an error PostgreSQL answered with, or undefined for transport failures. */
export function sqlState(error: unknown): string | undefined {
  return error instanceof pg.DatabaseError ? error.code : undefined
}

/**
 * A pg failure → BatonError: refused credentials are UNAUTHORIZED, a
 * database that does not exist is INVALID_ARGUMENT (the URL names it), the
 * rest BACKEND_UNAVAILABLE (answered, or not answered in time).
 */
export function storeError(target: PostgresTarget, cause: unknown): BatonError {
  if (cause instanceof BatonError) return cause
  const code = sqlState(cause)
  const detail = cause instanceof Error ? cause.message : String(cause)
  if (code === '28P01' || code === '28000') {
    return unauthorized(target.label, `user "${target.user}": ${detail}; check the user and password in the store URL`, cause)
  }
  if (code === '3D000') {
    return invalidArgument(`the database "${target.database}" does not exist on the ${target.label}; create it (CREATE DATABASE ...) or name another one in the URL path`, cause)
  }
  return backendUnavailable(target.label, cause, code !== undefined && !UNAVAILABLE_STATES.test(code))
}

/** Connection exceptions (08…) and a server starting up or shutting down (57P0…): not an answer to the call. */
const UNAVAILABLE_STATES = /^(08|57P0)/

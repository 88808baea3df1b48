import pg from 'pg'
import type { DriverOptions } from '../../core/driver.js'
import { BatonError, backendUnavailable, invalidArgument, unauthorized } from '../../core/errors.js'
import type { StoreUrl } from '../../core/url.js'
import { checkSingleHost, parsePoolSize, parsePort, sslOptions } from '../sql-common/options.js'

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
  checkSingleHost(url, 'postgres')
  const schema = url.params.get('schema') ?? 'baton'
  if (!SCHEMA_PATTERN.test(schema)) {
    throw invalidArgument(`"schema" in ${url.display} must be 1-40 lower-case letters, digits or '_', not starting with a digit`)
  }
  if (url.path.includes('/')) {
    throw invalidArgument(`the database "${url.path}" in ${url.display} must be a single name (postgres://host:port/database)`)
  }
  const poolSize = parsePoolSize(url, DEFAULT_POOL_SIZE)
  const address = url.hosts[0]
  const socketOrHost = url.params.get('host')
  if (address && (socketOrHost !== null || url.params.has('port'))) {
    throw invalidArgument(`${url.display} names its host twice; give host:port before the path, or ?host=&port= with nothing there`)
  }
  const user = url.username ?? process.env.PGUSER ?? 'postgres'
  const database = url.path || user
  const client: pg.ClientConfig = {
    host: address?.host ?? socketOrHost ?? undefined,
    port: address?.port ?? parsePort(url, DEFAULT_PORT),
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

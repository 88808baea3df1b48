import type { PoolOptions } from 'mysql2'
import type { DriverOptions } from '../../core/driver.js'
import { BatonError, backendUnavailable, invalidArgument, unauthorized } from '../../core/errors.js'
import type { StoreUrl } from '../../core/url.js'
import { checkSingleHost, parsePoolSize, parsePort, sslOptions } from '../sql-common/options.js'

export interface MysqlTarget {
  /** Settings for every connection: the pool's and the poller's. */
  readonly connection: PoolOptions
  readonly poolSize: number
  readonly user: string
  readonly database: string
  /** The URL with its password masked. */
  readonly display: string
  /** "mysql store at <display>", for messages. */
  readonly label: string
}

const DEFAULT_PORT = 3306
const DEFAULT_POOL_SIZE = 10

/**
 * URL → mysql2 settings:
 * mysql://[user[:password]@]host[:port]/database[?sslmode=disable|require|verify-ca|verify-full]
 * [&sslrootcert=/path/ca.pem][&socket=/run/mysqld/mysqld.sock (with no host before the path)]
 * [&poolSize=10][&fenceTtl=1h]; mariadb:// is the same store.
 */
export function mysqlTarget(url: StoreUrl, options: DriverOptions): MysqlTarget {
  checkSingleHost(url, 'mysql')
  if (!url.path || url.path.includes('/')) {
    throw invalidArgument(`${url.display} must name one database in its path (mysql://host:port/database): MySQL has no default database to put baton's tables in`)
  }
  const address = url.hosts[0]
  const socket = url.params.get('socket')
  if (address && (socket !== null || url.params.has('port'))) {
    throw invalidArgument(`${url.display} names its server twice; give host:port before the path, or ?socket= with nothing there`)
  }
  if (!address && socket === null) throw invalidArgument(`${url.display} names no server; give host:port before the path, or ?socket=`)
  const user = url.username ?? 'root'
  const ssl = sslOptions(url)
  const connection: PoolOptions = {
    ...(socket !== null ? { socketPath: socket } : { host: address!.host, port: address!.port ?? parsePort(url, DEFAULT_PORT) }),
    user,
    database: url.path,
    ...(url.password !== undefined ? { password: url.password } : {}),
    // node's TLS options, which mysql2 hands to tls.connect.
    ...(ssl ? { ssl: ssl as PoolOptions['ssl'] } : {}),
    connectTimeout: options.connectTimeoutMs,
    // Tokens are BIGINT: as strings, never rounded through a double.
    supportBigNumbers: true,
    bigNumberStrings: true,
    // Some files hold more than one statement (drop-all.sql, sweep-drop.sql);
    // values only ever travel as placeholders, escaped by the client.
    multipleStatements: true,
    // A server gone without a word (a partition) is noticed by idle connections.
    enableKeepAlive: true,
    keepAliveInitialDelay: 10_000,
  }
  return {
    connection, poolSize: parsePoolSize(url, DEFAULT_POOL_SIZE), user, database: url.path,
    display: url.display, label: `mysql store at ${url.display}`,
  }
}

/** The server's error number (ER_...), or undefined for transport failures. */
export function errorNumber(error: unknown): number | undefined {
  const errno = (error as { errno?: unknown; sqlState?: unknown } | null)?.errno
  return typeof errno === 'number' && typeof (error as { sqlState?: unknown }).sqlState === 'string' ? errno : undefined
}

/**
 * InnoDB gave up a transaction to break a deadlock, or a row lock wait timed
 * out, or a named lock wait was refused as a deadlock (3058, MySQL 8's
 * ER_USER_LOCK_DEADLOCK): nothing was applied, try again.
 */
export function isTransient(error: unknown): boolean {
  const errno = errorNumber(error)
  return errno === 1213 || errno === 1205 || errno === 3058
}

/** Codes of a connection that is gone (closed, reset, killed by the server): no answer came. */
const LOST = new Set(['PROTOCOL_CONNECTION_LOST', 'ECONNRESET', 'EPIPE', 'ER_CONNECTION_KILLED', 'ER_SERVER_SHUTDOWN'])

/** The connection was gone before an answer came (not a timeout of ours: that one is reported). */
export function isConnectionLost(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  const errno = errorNumber(error)
  return (typeof code === 'string' && LOST.has(code)) || errno === 1927 || errno === 2006 || errno === 2013
}

const ACCESS_DENIED = new Set([1045, 1044, 1698])
const NO_DATABASE = 1049
/** Answers that mean the server is going away or not ready, not an answer to the call. */
const UNAVAILABLE = new Set([1053, 1040, 1927, 2006, 2013, 1317])

/**
 * A mysql2 failure → BatonError: refused credentials are UNAUTHORIZED, a
 * database that does not exist is INVALID_ARGUMENT (the URL names it), the
 * rest BACKEND_UNAVAILABLE (answered, or not answered in time).
 */
export function storeError(target: MysqlTarget, cause: unknown): BatonError {
  if (cause instanceof BatonError) return cause
  const errno = errorNumber(cause)
  const detail = cause instanceof Error ? cause.message : String(cause)
  if (errno !== undefined && ACCESS_DENIED.has(errno)) {
    return unauthorized(target.label, `user "${target.user}": ${detail}; check the user and password in the store URL`, cause)
  }
  if (errno === NO_DATABASE) {
    return invalidArgument(`the database "${target.database}" does not exist on the ${target.label}; create it (CREATE DATABASE ...) or name another one in the URL path`, cause)
  }
  return backendUnavailable(target.label, cause, errno !== undefined && !UNAVAILABLE.has(errno))
}

/** How long a connection of ours is given to say goodbye at close before it is cut off. */
const QUIT_WITHIN_MS = 1000

interface OwnConnection {
  end(): Promise<void>
  destroy(): void
  /** mysql2's connection under the promise wrapper (its socket is `stream`). */
  readonly connection?: object
}

/**
 * Cuts one of the driver's own connections off at once: the socket is
 * destroyed, so a query in flight fails now (mysql2's destroy() only ends
 * its side of the socket, and the query waits for a server that may never
 * answer).
 */
export function cutOff(connection: OwnConnection): void {
  const socket = (connection.connection as { stream?: { destroy(): void } } | undefined)?.stream
  if (socket) socket.destroy()
  else connection.destroy()
}

/**
 * Ends one of the driver's own connections (the poller's, the bell's): a
 * polite QUIT, but one a server that stopped answering (paused, cut off)
 * can not hold up: end() waits for the query in flight.
 */
export async function endConnection(connection: OwnConnection | undefined): Promise<void> {
  if (!connection) return
  let timer: NodeJS.Timeout | undefined
  const cut = new Promise<void>((resolve) => {
    timer = setTimeout(() => { cutOff(connection); resolve() }, QUIT_WITHIN_MS)
  })
  await Promise.race([connection.end().catch(() => cutOff(connection)), cut])
  clearTimeout(timer)
}

/**
 * A query on one of the driver's own connections, failed after `timeoutMs`
 * by cutting the connection off. Not mysql2's `timeout` option: its timer
 * outlives a connection lost meanwhile (nothing clears it but the answer),
 * and kept a closed client's process alive for the whole timeout.
 */
export async function queryWithin<T>(connection: OwnConnection & { query(sql: string): Promise<T> }, sql: string, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([
      connection.query(sql),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          cutOff(connection)
          reject(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: 'PROTOCOL_SEQUENCE_TIMEOUT' }))
        }, timeoutMs)
      }),
    ])
  } finally {
    clearTimeout(timer)
  }
}

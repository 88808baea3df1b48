import { inspect } from 'node:util'
// The package's root, not mysql2/promise: the CLI bundle places packages by their root name.
import mysql from 'mysql2'
import type { Pool } from 'mysql2/promise'
import type {
  AcquireRequest, AcquireResult, Capabilities, Driver, DriverFactory, DriverOptions, ExtendResult,
  HoldRef, ListPage, LockInfo, LockSpec, Wake,
} from '../../core/driver.js'
import type { StoreUrl } from '../../core/url.js'
import { mysqlTarget, storeError, type MysqlTarget } from './connection.js'
import { Holds } from './holds.js'
import { Inspector } from './inspect.js'
import { Sweeper } from '../sql-common/sweeper.js'
import { ensureSchema } from './schema.js'
import { mysqlSql, type SqlSet } from './sql.js'
import { sweepIdle } from './sweep.js'
import { Transactions } from './tx.js'
import { Wakeups } from './wakeups.js'

const CAPABILITIES: Capabilities = {
  fair: true, rwlock: true, semaphore: true, lockDelay: true, handoff: true, durableTokens: true,
}

/**
 * MySQL / MariaDB. Leases are rows whose expiry is the database clock; each
 * operation is one transaction on a pooled connection that first takes the
 * name's InnoDB row lock (so one name's operations run one after another)
 * and then applies the grant rules of src/core/hold-table.ts to the rows it
 * read. A release hands the name to the next in line in the same
 * transaction and leaves that waiter's client a wake-up row, which the
 * client's poller reads (no LISTEN/NOTIFY here; listener.ts).
 *
 * Assembled from its parts: the operations that change holds (holds.ts) on
 * the rows of one name (name-state.ts), transactions (tx.ts), wake-ups,
 * the doorbell and election observers (wakeups.ts, listener.ts, bell.ts),
 * inspect and list (inspect.ts), the sweep of idle names (sweep.ts).
 */
export class MysqlDriver implements Driver {
  readonly store = 'mysql'
  readonly capabilities = CAPABILITIES
  private readonly wakeups: Wakeups
  private readonly holds: Holds
  private readonly inspector: Inspector
  private readonly sweeper: Sweeper
  private closed = false

  constructor(
    private readonly pool: Pool,
    private readonly target: MysqlTarget,
    sql: SqlSet,
    options: DriverOptions,
  ) {
    this.wakeups = new Wakeups(target, sql, options)
    const transactions = new Transactions(pool, target, sql, options.commandTimeoutMs, () => this.wakeups.ring())
    this.holds = new Holds(transactions, options.clientId)
    this.inspector = new Inspector(transactions)
    this.sweeper = new Sweeper(options.fenceTtlMs, () => sweepIdle(transactions, options.fenceTtlMs))
  }

  async start(): Promise<void> {
    await this.wakeups.start()
    this.sweeper.start()
  }

  async acquire(request: AcquireRequest): Promise<AcquireResult> {
    const result = await this.holds.acquire(request)
    // An owner that waits in line: the poller waits on the bell of the name's holder.
    this.wakeups.waitsFor(request.owner, result.status === 'busy' && request.enqueue ? request.name : undefined)
    return result
  }

  extend(holds: readonly HoldRef[], ttlMs: number): Promise<ExtendResult[]> {
    return this.holds.extend(holds, ttlMs)
  }

  release(hold: HoldRef | (LockSpec & { owner: string })): Promise<boolean> {
    this.wakeups.waitsFor(hold.owner, undefined)
    return this.holds.release(hold)
  }

  downgrade(hold: HoldRef): Promise<boolean> {
    return this.holds.downgrade(hold)
  }

  proclaim(hold: HoldRef, value: string): Promise<boolean> {
    return this.holds.proclaim(hold, value)
  }

  watch(_name: string, owner: string, onWake: (wake: Wake) => void): () => void {
    return this.wakeups.watch(owner, onWake)
  }

  observe(name: string, onChange: () => void): () => void {
    return this.wakeups.observe(name, onChange)
  }

  inspect(name: string): Promise<LockInfo | null> {
    return this.inspector.inspect(name)
  }

  list(prefix: string, page?: ListPage): AsyncIterable<LockInfo> {
    return this.inspector.list(prefix, page)
  }

  forceRelease(name: string): Promise<boolean> {
    return this.holds.forceRelease(name)
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.sweeper.stop()
    await Promise.allSettled([this.wakeups.close(), this.pool.end()])
  }

  /** util.inspect(baton) must show neither the password nor the pool's settings. */
  [inspect.custom](): string {
    return `MysqlDriver { ${this.target.display} }`
  }
}

export const createMysqlDriver: DriverFactory = async (url: StoreUrl, options: DriverOptions) => {
  const target = mysqlTarget(url, options)
  const sql = mysqlSql()
  const pool = mysql.createPool({ ...target.connection, connectionLimit: target.poolSize, waitForConnections: true, maxIdle: target.poolSize }).promise()
  // Every connection: UTC, so UNIX_TIMESTAMP(NOW(6)) is never ambiguous
  // (a DST fall-back hour), and READ COMMITTED, so reads under the name's
  // lock see the latest commits and InnoDB takes no gap locks.
  pool.pool.on('connection', (connection) => {
    connection.query("SET SESSION time_zone = '+00:00'; SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", () => {})
    connection.on('error', () => {})
  })
  try {
    await ensureSchema(pool, target, sql)
    const driver = new MysqlDriver(pool, target, sql, options)
    await driver.start()
    return driver
  } catch (cause) {
    await pool.end().catch(() => {})
    throw storeError(target, cause)
  }
}

// The package's root, not mysql2/promise: the CLI bundle places packages by their root name.
import mysql from 'mysql2'
import type { Pool, PoolConnection, ResultSetHeader } from 'mysql2/promise'
import { isConnectionLost, isTransient, queryWithin, storeError, type MysqlTarget } from './connection.js'
import type { SqlSet, Statement } from './sql.js'

/** Attempts of a transaction InnoDB gave up to break a deadlock (nothing of it was applied). */
const TRANSIENT_ATTEMPTS = 5

/**
 * How operations run: one transaction on one pooled connection, or a
 * read-only snapshot. After a commit that left wake-up rows, `onWakes`
 * runs (the client's bell rings).
 */
export class Transactions {
  constructor(
    private readonly pool: Pool,
    private readonly target: MysqlTarget,
    private readonly sql: SqlSet,
    private readonly timeoutMs: number,
    private readonly onWakes: () => void,
  ) {}

  /**
   * One operation: one transaction on one pooled connection, its statements
   * sent together wherever no answer is needed in between (the opening
   * reads in one round trip, the writes with the COMMIT in another). A
   * transaction InnoDB rolled back to break a deadlock (or whose row lock
   * wait timed out) applied nothing, and is run again.
   */
  async transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const connection = await this.connection()
      const tx = new Tx(connection, this.sql, this.timeoutMs, ['START TRANSACTION'])
      try {
        const result = await work(tx)
        await tx.commit()
        connection.release()
        if (tx.wroteWakes) this.onWakes()
        return result
      } catch (cause) {
        // A connection that was gone before its COMMIT was sent (a pooled
        // connection the server had killed, not yet noticed by the pool)
        // applied nothing: InnoDB rolls back what a lost session left open.
        if (isConnectionLost(cause) && !tx.committing && attempt < TRANSIENT_ATTEMPTS) {
          connection.destroy()
          continue
        }
        if (isTransient(cause) && attempt < TRANSIENT_ATTEMPTS) {
          const clean = await connection.query('ROLLBACK').then(() => true, () => false)
          if (clean) connection.release()
          else connection.destroy()
          continue
        }
        // Its state is unknown (a reply lost, a timeout): never handed out again.
        connection.destroy()
        throw storeError(this.target, cause)
      }
    }
  }

  /** A read-only transaction on one consistent snapshot (inspect, list). */
  async snapshot<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    const connection = await this.connection()
    const tx = new Tx(connection, this.sql, this.timeoutMs, [
      'SET TRANSACTION ISOLATION LEVEL REPEATABLE READ', 'START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY',
    ])
    try {
      const result = await work(tx)
      await tx.commit()
      connection.release()
      return result
    } catch (cause) {
      connection.destroy()
      throw storeError(this.target, cause)
    }
  }

  private async connection(): Promise<PoolConnection> {
    try {
      return await this.pool.getConnection()
    } catch (cause) {
      throw storeError(this.target, cause)
    }
  }
}

/**
 * The statements of one transaction. Writes whose answer nothing needs wait
 * and travel with the next read, or with the COMMIT: the lock rules need
 * two round trips per operation, not one per statement. Values only ever
 * travel as placeholders, escaped by mysql2's format.
 */
export class Tx {
  /** Whether a wake-up row was written (the client's bell rings after the commit). */
  wroteWakes = false
  private pending: string[]
  private pendingCount: number

  constructor(
    private readonly connection: PoolConnection,
    private readonly sql: SqlSet,
    private readonly timeoutMs: number,
    opening: string[],
  ) {
    this.pending = [...opening]
    this.pendingCount = opening.length
  }

  write(statement: Statement, values: unknown[] = []): void {
    if (statement === 'wake') this.wroteWakes = true
    this.queue(statement, values)
  }

  async read<R>(statement: Statement, values: unknown[] = []): Promise<R[]> {
    const [rows] = await this.readMany([[statement, values]])
    return rows as R[]
  }

  /** A statement whose count of changed rows decides what comes next. */
  async exec(statement: Statement, values: unknown[] = []): Promise<ResultSetHeader> {
    const [header] = await this.readMany([[statement, values]])
    return header as unknown as ResultSetHeader
  }

  /** Sends what waits and these, in one round trip; the answers of these, in order. */
  async readMany(list: readonly [Statement, unknown[]][]): Promise<unknown[][]> {
    const ends: number[] = []
    for (const [statement, values] of list) {
      this.queue(statement, values)
      ends.push(this.pendingCount - 1)
    }
    const results = await this.flush()
    return ends.map((end) => results[end] as unknown[])
  }

  /** Whether the COMMIT was sent: from then on, a lost answer leaves the outcome unknown. */
  committing = false

  async commit(): Promise<void> {
    this.committing = true
    this.pending.push('COMMIT')
    this.pendingCount++
    await this.flush()
  }

  private queue(statement: Statement, values: unknown[]): void {
    this.pending.push(mysql.format(this.sql.statements[statement], values as Parameters<typeof mysql.format>[1]))
    this.pendingCount += this.sql.counts[statement]
  }

  /** Every answer of the round trip, one per statement. */
  private async flush(): Promise<unknown[]> {
    const text = this.pending.join(';\n')
    const count = this.pendingCount
    this.pending = []
    this.pendingCount = 0
    const [results] = await queryWithin(this.connection, text, this.timeoutMs)
    return count === 1 ? [results] : (results as unknown[])
  }
}

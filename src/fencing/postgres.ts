/**
 * Fencing for data kept in PostgreSQL: a write is applied only inside a
 * transaction that first advanced the resource's fence (see sql/advance.sql).
 * Takes any client with pg's `query(text, values)` shape, so the library does
 * not depend on `pg`.
 */
import { readFileSync } from 'node:fs'
import { invalidArgument } from '../core/errors.js'
import { checkResource, parseFencingToken, staleToken } from './fence.js'

/** A pg Client or PoolClient (anything with pg's query shape). */
export interface PgQueryable {
  query(text: string, values?: unknown[]): Promise<{ rows: Array<Record<string, unknown>> }>
}

/** A pg Pool (anything that lends a client that can be released). */
export interface PgPoolLike {
  connect(): Promise<PgQueryable & { release(error?: Error | boolean): void }>
}

export interface PostgresFenceOptions {
  /** Table holding the fences, optionally schema-qualified. Default `baton_fences`. */
  table?: string
}

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}(\.[a-z_][a-z0-9_]{0,62})?$/

function sql(file: string, table: string): string {
  return readFileSync(new URL(`./sql/${file}.sql`, import.meta.url), 'utf8').replaceAll('baton_fences', table)
}

/** The fence of resources kept in PostgreSQL. Create once, share. */
export class PostgresFence {
  private readonly installSql: string
  private readonly advanceSql: string
  private readonly highestSql: string

  constructor(options: PostgresFenceOptions = {}) {
    const table = options.table ?? 'baton_fences'
    if (typeof table !== 'string' || !IDENTIFIER.test(table)) {
      throw invalidArgument(`PostgresFence table must be a lower-case SQL identifier (optionally schema.table), got ${JSON.stringify(table)}`)
    }
    this.installSql = sql('install', table)
    this.advanceSql = sql('advance', table)
    this.highestSql = sql('highest', table)
  }

  /** Creates the fence table if it is missing. Safe to run at every start. */
  async install(db: PgQueryable): Promise<void> {
    await db.query(this.installSql)
  }

  /**
   * Inside YOUR transaction, before your write: advances the fence of
   * `resource` to `token`, or throws STALE_TOKEN (roll back). The fence row
   * stays locked until your transaction ends, which orders your write with it.
   */
  async check(tx: PgQueryable, resource: string, token: bigint | string | number): Promise<void> {
    const wanted = parseFencingToken(token)
    checkResource(resource)
    const accepted = await tx.query(this.advanceSql, [resource, wanted.toString()])
    if (accepted.rows.length > 0) return
    const highest = await tx.query(this.highestSql, [resource])
    throw staleToken(resource, wanted, BigInt(String(highest.rows[0]?.token ?? wanted)))
  }

  /**
   * BEGIN; check; `write(client)`; COMMIT — or ROLLBACK when the token is
   * stale or the write throws. Returns what `write` returns.
   * @example
   * await fence.run(pool, lease.name, lease.token, (db) =>
   *   db.query('UPDATE accounts SET balance = balance - $1 WHERE id = $2', [amount, id]))
   */
  async run<T>(pool: PgPoolLike, resource: string, token: bigint | string | number, write: (tx: PgQueryable) => Promise<T>): Promise<T> {
    const client = await pool.connect()
    let broken: Error | undefined
    try {
      await client.query('BEGIN')
      try {
        await this.check(client, resource, token)
        const result = await write(client)
        await client.query('COMMIT')
        return result
      } catch (error) {
        await client.query('ROLLBACK').catch((rollbackError: Error) => { broken = rollbackError })
        throw error
      }
    } finally {
      client.release(broken ?? false)
    }
  }
}

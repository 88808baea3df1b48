import type pg from 'pg'
import { invalidArgument, type BatonError } from '../../core/errors.js'
import { sqlState, storeError, type PostgresTarget } from './connection.js'
import { migrationsPath, quoteIdent, type SqlSet } from './sql.js'

/** Advisory lock key (first half) under which clients apply migrations one at a time. */
const MIGRATION_LOCK = 0x6261746f // "bato"

/**
 * Brings the schema to the latest version on first use. The common case, a
 * schema already up to date, is one read and needs no rights beyond using
 * the tables. Otherwise one transaction, under an advisory lock so that two
 * clients starting at once apply each migration exactly once, creates the
 * schema if missing and applies what is not yet recorded.
 */
export async function ensureSchema(pool: pg.Pool, target: PostgresTarget, sql: SqlSet): Promise<void> {
  const latest = sql.migrations.at(-1)!.version
  if ((await currentVersion(pool, target, sql)) >= latest) return

  const client = await pool.connect().catch((cause: unknown) => {
    throw storeError(target, cause)
  })
  const schema = quoteIdent(target.schema)
  let step = 'create the schema'
  try {
    await client.query('BEGIN')
    await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [MIGRATION_LOCK, target.schema])
    const exists = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [target.schema])
    // CREATE SCHEMA IF NOT EXISTS would ask for the right to create schemas
    // even when the schema is there, so only a missing schema is created.
    if (exists.rowCount === 0) await client.query(`CREATE SCHEMA ${schema}`)
    step = 'create tables in the schema'
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${schema}.migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
    )
    const applied = new Set((await client.query<{ version: number }>(`SELECT version FROM ${schema}.migrations`)).rows.map((r) => r.version))
    for (const migration of sql.migrations) {
      if (applied.has(migration.version)) continue
      await client.query(migration.text)
      await client.query(`INSERT INTO ${schema}.migrations (version) VALUES ($1)`, [migration.version])
    }
    await client.query('COMMIT')
  } catch (cause) {
    await client.query('ROLLBACK').catch(() => {})
    throw sqlState(cause) === '42501' ? missingRight(target, step, cause) : storeError(target, cause)
  } finally {
    client.release()
  }
}

async function currentVersion(pool: pg.Pool, target: PostgresTarget, sql: SqlSet): Promise<number> {
  try {
    const { rows } = await pool.query<{ version: number }>(sql.statements.version.text)
    return rows[0]?.version ?? 0
  } catch (cause) {
    const state = sqlState(cause)
    if (state === '42P01' || state === '3F000') return 0 // no table, or no schema yet
    if (state === '42501') throw missingRight(target, 'use the schema', cause)
    throw storeError(target, cause)
  }
}

/** The error for a user that may not do `step`, naming the statement an administrator can run. */
function missingRight(target: PostgresTarget, step: string, cause: unknown): BatonError {
  const schema = quoteIdent(target.schema)
  const user = quoteIdent(target.user)
  const fix =
    step === 'create the schema'
      ? `CREATE SCHEMA ${schema} AUTHORIZATION ${user};`
      : step === 'create tables in the schema'
        ? `GRANT USAGE, CREATE ON SCHEMA ${schema} TO ${user};`
        : `GRANT USAGE ON SCHEMA ${schema} TO ${user}; GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${schema} TO ${user};`
  return invalidArgument(
    `user "${target.user}" may not ${step} ${schema} on the ${target.label}; have an administrator run: ${fix} ` +
      `(baton then creates its tables on first use; their SQL is in ${migrationsPath})`,
    cause,
  )
}

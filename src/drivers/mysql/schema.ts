import type { Pool } from 'mysql2/promise'
import { invalidArgument, type BatonError } from '../../core/errors.js'
import { errorNumber, storeError, type MysqlTarget } from './connection.js'
import { migrationsPath, type SqlSet } from './sql.js'

const NO_SUCH_TABLE = 1146
/**
 * The user may not use or create the tables (ER_TABLEACCESS_DENIED_ERROR), or
 * not the database (ER_DBACCESS_DENIED_ERROR). Not 1045, refused credentials:
 * that is UNAUTHORIZED (storeError).
 */
const DENIED = new Set([1142, 1044])

/**
 * Brings the schema to the latest version on first use, as the PostgreSQL
 * store does: the common case, tables up to date, is one read needing no
 * rights beyond using them, and a user that may not create tables is told
 * the GRANT to ask for and where the migration files are (an administrator
 * can apply them by hand; baton then only reads the version). A separate
 * migrate step would make every deployment remember one more command for
 * the sake of the few with restricted grants, who get a precise message
 * here instead.
 *
 * Otherwise the migrations not yet recorded are applied by one client at a
 * time, under a named lock (GET_LOCK is the right tool here: it guards this
 * one connection's own work and ends with it). MySQL commits DDL statement
 * by statement, so a migration interrupted half-way is applied again from
 * its start: every statement in the files is written to be repeatable.
 */
export async function ensureSchema(pool: Pool, target: MysqlTarget, sql: SqlSet): Promise<void> {
  const latest = sql.migrations.at(-1)!.version
  if ((await currentVersion(pool, target, sql)) >= latest) return

  const connection = await pool.getConnection().catch((cause: unknown) => {
    throw storeError(target, cause)
  })
  let step = 'create tables in'
  try {
    const [[got]] = (await connection.query('SELECT GET_LOCK(?, ?) AS got', [`baton.migrate.${target.database}`, 60])) as unknown as [{ got: number | null }[]]
    if (got?.got !== 1) throw new Error('another client held the migration lock for 60 s')
    await connection.query(
      'CREATE TABLE IF NOT EXISTS baton_migrations (version INT NOT NULL PRIMARY KEY, applied_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)) ENGINE=InnoDB',
    )
    const [rows] = (await connection.query('SELECT version FROM baton_migrations')) as unknown as [{ version: number }[]]
    const applied = new Set(rows.map((r) => Number(r.version)))
    for (const migration of sql.migrations) {
      if (applied.has(migration.version)) continue
      step = `apply ${migration.file} to`
      await connection.query(migration.text)
      await connection.query('INSERT INTO baton_migrations (version) VALUES (?)', [migration.version])
    }
  } catch (cause) {
    const errno = errorNumber(cause)
    throw errno !== undefined && DENIED.has(errno) ? missingRight(target, step, cause) : storeError(target, cause)
  } finally {
    await connection.query('DO RELEASE_LOCK(?)', [`baton.migrate.${target.database}`]).catch(() => {})
    connection.release()
  }
}

async function currentVersion(pool: Pool, target: MysqlTarget, sql: SqlSet): Promise<number> {
  try {
    const [rows] = (await pool.query(sql.statements.version)) as unknown as [{ version: number | string }[]]
    return Number(rows[0]?.version ?? 0)
  } catch (cause) {
    const errno = errorNumber(cause)
    if (errno === NO_SUCH_TABLE) return 0
    if (errno !== undefined && DENIED.has(errno)) throw missingRight(target, 'use the tables in', cause)
    throw storeError(target, cause)
  }
}

/** The error for a user that may not do `step`, naming the statement an administrator can run. */
function missingRight(target: MysqlTarget, step: string, cause: unknown): BatonError {
  const fix = step === 'use the tables in'
    ? `GRANT SELECT, INSERT, UPDATE, DELETE ON \`${target.database}\`.* TO '${target.user}'@'%';`
    : `GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, INDEX ON \`${target.database}\`.* TO '${target.user}'@'%';`
  return invalidArgument(
    `user "${target.user}" may not ${step} the database "${target.database}" on the ${target.label}; have an administrator run: ${fix} ` +
      `(or apply the migrations by hand: their SQL is in ${migrationsPath})`,
    cause,
  )
}

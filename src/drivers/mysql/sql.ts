import { fileURLToPath } from 'node:url'
import { readMigrations, readStatements, type Migration } from '../sql-common/files.js'

/**
 * The SQL of this driver: ./sql/<statement>.sql (one statement, or a few
 * run together, per file) and ./migrations/NNNN_<what>.sql. The lock rules
 * themselves are TypeScript (src/core/hold-table.ts), run inside one
 * transaction per operation that has locked the name's row: MySQL's stored
 * routines differ between MySQL and MariaDB and need rights (CREATE ROUTINE,
 * binary-log trust) that application users seldom have.
 */
export const STATEMENTS = [
  'lock-name', 'read-name', 'read-holds', 'read-line', 'grant', 'insert-hold', 'drop-past-holds', 'enqueue',
  'refresh-entry', 'leave-line', 'set-kind', 'touch', 'release-hold', 'downgrade', 'proclaim', 'drop-all', 'wake',
  'live-holds', 'renew', 'info-names', 'info-name', 'info-holds', 'info-line', 'sweep-candidates', 'sweep-lock',
  'sweep-drop', 'clock', 'version', 'poll-wakes', 'ack-wakes', 'poll-changes', 'bell-of-holder',
] as const

export type Statement = (typeof STATEMENTS)[number]

export interface SqlSet {
  readonly statements: Readonly<Record<Statement, string>>
  /** How many statements each file holds (a round trip's answers come one per statement). */
  readonly counts: Readonly<Record<Statement, number>>
  readonly migrations: readonly Migration[]
}

const sqlDir = new URL('./sql/', import.meta.url)
const migrationsDir = new URL('./migrations/', import.meta.url)

/** Where the migration files are, for messages that ask an administrator to apply them. */
export const migrationsPath = fileURLToPath(migrationsDir)

let cached: SqlSet | undefined

/**
 * The files with their comment lines taken out: mysql2 fills every `?` of
 * the text, a comment's included.
 */
export function mysqlSql(): SqlSet {
  if (cached) return cached
  const raw = readStatements(sqlDir, STATEMENTS)
  const statements = Object.fromEntries(Object.entries(raw).map(([name, text]) => [name, withoutComments(text as string)])) as Record<Statement, string>
  const counts = Object.fromEntries(Object.entries(statements).map(([name, text]) => [name, text.split(/;\s*\n/).length])) as Record<Statement, number>
  cached = { statements, counts, migrations: readMigrations(migrationsDir) }
  return cached
}

function withoutComments(text: string): string {
  return text.split('\n').filter((line) => !/^\s*--/.test(line)).join('\n').trim()
}

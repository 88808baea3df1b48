import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/**
 * The SQL of this driver, read from ./sql/<operation>.sql (one statement per
 * operation) and ./migrations/NNNN_<what>.sql (the versioned schema) next to
 * this file. `{{schema}}` in them stands for the schema of ?schema=.
 */
/** Each operation's file, with the number of parameters ($1…$n) its header documents. */
export const OPERATIONS = {
  'acquire': 14,
  'release': 5,
  'extend': 4,
  'downgrade': 4,
  'force-release': 2,
  'inspect': 1,
  'list': 3,
  'sweep': 2,
  'version': 0,
  'proclaim': 4,
} as const satisfies Record<string, number>

export type Operation = keyof typeof OPERATIONS

/** A statement ready for pg: named, so each pooled connection parses and plans it once. */
export interface Statement {
  readonly name: string
  readonly text: string
  readonly params: number
}

export interface Migration {
  readonly version: number
  readonly file: string
  readonly text: string
}

export interface SqlSet {
  readonly statements: Readonly<Record<Operation, Statement>>
  readonly migrations: readonly Migration[]
}

const sqlDir = new URL('./sql/', import.meta.url)
const migrationsDir = new URL('./migrations/', import.meta.url)

/** Where the migration files are, for messages that ask an administrator to apply one. */
export const migrationsPath = fileURLToPath(migrationsDir)

let sources: { operations: Record<Operation, string>; migrations: { version: number; file: string; text: string }[] } | undefined

/**
 * Reads every file once per process, before any connection exists, so a
 * broken install (a .sql file missing from dist/) fails with the file's path
 * and is not reported as a database that did not answer.
 */
function readSources(): NonNullable<typeof sources> {
  if (sources) return sources
  const operations = Object.fromEntries(
    operationNames().map((op) => [op, readFileSync(operationPath(op), 'utf8')]),
  ) as Record<Operation, string>
  const migrations = readdirSync(migrationsDir)
    .filter((file) => /^\d{4}_[\w-]+\.sql$/.test(file))
    .sort()
    .map((file) => ({ version: Number(file.slice(0, 4)), file, text: readFileSync(new URL(file, migrationsDir), 'utf8') }))
  if (migrations.length === 0) throw new Error(`no migrations found in ${migrationsPath}`)
  sources = { operations, migrations }
  return sources
}

/** The SQL with `{{schema}}` replaced by the (already validated) schema name, quoted. */
export function sqlFor(schema: string): SqlSet {
  const { operations, migrations } = readSources()
  const fill = (text: string) => text.replaceAll('{{schema}}', quoteIdent(schema))
  const statements = Object.fromEntries(
    operationNames().map((op) => {
      const text = fill(operations[op])
      const hash = createHash('sha1').update(text).digest('hex').slice(0, 10)
      return [op, { name: `baton_${op}_${hash}`, text, params: OPERATIONS[op] }]
    }),
  ) as Record<Operation, Statement>
  return { statements, migrations: migrations.map((m) => ({ ...m, text: fill(m.text) })) }
}

export function operationNames(): Operation[] {
  return Object.keys(OPERATIONS) as Operation[]
}

export function operationPath(op: Operation): URL {
  return new URL(`${op}.sql`, sqlDir)
}

export function quoteIdent(identifier: string): string {
  return `"${identifier.replaceAll('"', '""')}"`
}

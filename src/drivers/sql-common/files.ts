import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/**
 * The SQL files of a SQL store's driver (PostgreSQL, MySQL): one file per
 * statement in `sql/<name>.sql` and the versioned schema in
 * `migrations/NNNN_<what>.sql`, next to the driver's module. Read once per
 * process and before any connection exists, so a broken install (a .sql
 * file missing from dist/) fails with the file's path and is not reported
 * as a database that did not answer.
 */
export interface Migration {
  readonly version: number
  readonly file: string
  readonly text: string
}

export function readStatements<N extends string>(sqlDir: URL, names: readonly N[]): Record<N, string> {
  return Object.fromEntries(names.map((name) => [name, readFileSync(new URL(`${name}.sql`, sqlDir), 'utf8')])) as Record<N, string>
}

export function readMigrations(migrationsDir: URL): Migration[] {
  const migrations = readdirSync(migrationsDir)
    .filter((file) => /^\d{4}_[\w-]+\.sql$/.test(file))
    .sort()
    .map((file) => ({ version: Number(file.slice(0, 4)), file, text: readFileSync(new URL(file, migrationsDir), 'utf8') }))
  if (migrations.length === 0) throw new Error(`no migrations found in ${fileURLToPath(migrationsDir)}`)
  return migrations
}

/**
 * The MySQL driver's files and settings, without a server: every file's
 * placeholders are documented, comments never reach mysql2 (which would
 * fill a `?` in them), and store URLs map to the mysql2 settings they name.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { isBatonError } from '../../src/index.js'
import { parseStoreUrl } from '../../src/core/url.js'
import { mysqlTarget } from '../../src/drivers/mysql/connection.js'
import { mysqlSql, STATEMENTS } from '../../src/drivers/mysql/sql.js'
import { nextToken } from '../../src/core/hold-table.js'

const OPTIONS = { clientId: 'test', connectTimeoutMs: 1000, commandTimeoutMs: 1000, fenceTtlMs: 60_000 }
const target = (url: string) => mysqlTarget(parseStoreUrl(url), OPTIONS)

describe('mysql SQL files', () => {
  it('every statement file documents its placeholders, and its comments are taken out', () => {
    const sql = mysqlSql()
    for (const name of STATEMENTS) {
      const source = readFileSync(new URL(`../../src/drivers/mysql/sql/${name}.sql`, import.meta.url), 'utf8')
      const body = sql.statements[name]
      assert.doesNotMatch(body, /^\s*--/m, `${name}.sql: no comment line reaches mysql2`)
      if (body.includes('?')) assert.match(source.split('\n')[1] + source, /\?/, `${name}.sql documents its placeholders`)
      assert.ok(sql.counts[name] >= 1)
    }
    assert.equal(sql.counts['drop-all'], 2)
    assert.deepEqual(sql.migrations.map((m) => m.version), [1])
  })

  it('tokens: one above the counter, never below the clock in µs', () => {
    assert.equal(nextToken(5n, 3), 6n)
    assert.equal(nextToken(0n, 1_795_000_000_000_000), 1_795_000_000_000_000n)
  })
})

describe('mysql store URLs', () => {
  it('map host, port, user, password and database', () => {
    const t = target('mysql://app:s%40cret@db.internal:3307/locks?poolSize=4')
    assert.equal(t.connection.host, 'db.internal')
    assert.equal(t.connection.port, 3307)
    assert.equal(t.connection.user, 'app')
    assert.equal(t.connection.password, 's@cret')
    assert.equal(t.connection.database, 'locks')
    assert.equal(t.poolSize, 4)
    assert.doesNotMatch(t.display, /s@cret|s%40cret/)
    assert.equal(target('mariadb://db/locks').connection.port, 3306)
    assert.equal(target('mysql:///locks?socket=/run/mysqld/mysqld.sock').connection.socketPath, '/run/mysqld/mysqld.sock')
  })

  for (const [url, pattern] of [
    ['mysql://db', /one database/],
    ['mysql://db/a/b', /one database/],
    ['mysql://db/locks?schema=x', /unknown setting "schema"/],
    ['mysql://a:1,b:2/locks', /names 2 hosts/],
    ['mysql://db/locks?poolSize=0', /poolSize/],
    ['mysql://db/locks?sslmode=prefer', /fall back/],
    ['mysql://db:3306/locks?socket=/tmp/s', /names its server twice/],
  ] as const) {
    it(`refuses ${url} with INVALID_ARGUMENT`, () => {
      assert.throws(() => target(url), (error: unknown) => isBatonError(error, 'INVALID_ARGUMENT') && pattern.test((error as Error).message))
    })
  }
})

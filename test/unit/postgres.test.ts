/**
 * The PostgreSQL driver's files and settings, without a server: every
 * operation's SQL documents the parameters the driver passes, and store URLs
 * map to the pg settings they name.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { isBatonError } from '../../src/index.js'
import { parseStoreUrl } from '../../src/core/url.js'
import { postgresTarget } from '../../src/drivers/postgres/connection.js'
import { OPERATIONS, operationNames, operationPath, sqlFor } from '../../src/drivers/postgres/sql.js'

const OPTIONS = { clientId: 'test', connectTimeoutMs: 1000, commandTimeoutMs: 1000, fenceTtlMs: 60_000 }
const target = (url: string) => postgresTarget(parseStoreUrl(url), OPTIONS)

describe('postgres SQL files', () => {
  for (const op of operationNames()) {
    it(`${op}.sql uses and documents exactly its ${OPERATIONS[op]} parameters`, () => {
      const source = readFileSync(operationPath(op), 'utf8')
      const lines = source.split('\n')
      const header = lines.filter((l) => l.startsWith('--')).join('\n')
      const body = lines.filter((l) => !l.startsWith('--')).join('\n')
      const used = new Set([...body.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])))
      assert.deepEqual([...used].sort((a, b) => a - b), Array.from({ length: OPERATIONS[op] }, (_, i) => i + 1))
      for (const n of used) assert.match(header, new RegExp(`\\$${n}\\b`), `$${n} is documented in the header`)
    })
  }

  it('fills in the schema, quoted, everywhere', () => {
    const sql = sqlFor('my_locks')
    for (const text of [...Object.values(sql.statements).map((s) => s.text), ...sql.migrations.map((m) => m.text)]) {
      assert.doesNotMatch(text, /\{\{schema\}\}/)
    }
    assert.match(sql.statements.acquire.text, /"my_locks"\.acquire\(/)
    assert.deepEqual(sql.migrations.map((m) => m.version), [1, 2, 3, 4])
  })
})

describe('postgres store URLs', () => {
  it('maps user, password, host, port, database and schema', () => {
    const t = target('postgresql://app:s%40cret@db.example:6543/locks?schema=app_locks&poolSize=4')
    assert.equal(t.client.user, 'app')
    assert.equal(t.client.password, 's@cret')
    assert.equal(t.client.host, 'db.example')
    assert.equal(t.client.port, 6543)
    assert.equal(t.client.database, 'locks')
    assert.equal(t.schema, 'app_locks')
    assert.equal(t.poolSize, 4)
    assert.equal(t.client.ssl, false)
    assert.doesNotMatch(t.label, /cret/, 'no password in messages')
  })

  it('reaches a unix socket directory with ?host= and ?port=', () => {
    const t = target('postgres:///locks?host=/run/postgresql&port=5433')
    assert.equal(t.client.host, '/run/postgresql')
    assert.equal(t.client.port, 5433)
    assert.equal(t.client.database, 'locks')
  })

  it('maps sslmode as libpq does, as far as node TLS can', () => {
    assert.deepEqual(target('postgres://h/db?sslmode=require').client.ssl, { rejectUnauthorized: false })
    const full = target('postgres://h/db?sslmode=verify-full').client.ssl as { rejectUnauthorized: boolean; checkServerIdentity?: unknown }
    assert.equal(full.rejectUnauthorized, true)
    assert.equal(full.checkServerIdentity, undefined, 'verify-full checks the host name')
    const ca = target('postgres://h/db?sslmode=verify-ca').client.ssl as { checkServerIdentity?: () => unknown }
    assert.equal(ca.checkServerIdentity?.(), undefined, 'verify-ca accepts any host name')
  })

  it('refuses what it can not honour with INVALID_ARGUMENT', () => {
    for (const url of [
      'postgres://a:1,b:2/db', 'postgres://h/db?sslmode=prefer', 'postgres://h/db?schema=Has-Dash', 'postgres://h/db?schema=' + 'x'.repeat(41),
      'postgres://h/db?poolSize=0', 'postgres://h/db?port=1', 'postgres:///db?port=99999', 'postgres://h/a/b',
    ]) {
      assert.throws(() => target(url), (e) => isBatonError(e, 'INVALID_ARGUMENT'), url)
    }
  })
})

/** Store URLs: credentials never reach a message, whatever characters they hold. */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { BatonError } from '../../src/core/errors.js'
import { maskUrl, parseStoreUrl } from '../../src/core/url.js'

const SECRETS = ['s3cr/et', 'zz@q', 'p@ss', 'a@b/c:d', '%E0%A4%A', 'hunter2']

function failure(run: () => unknown): BatonError {
  try {
    run()
  } catch (error) {
    assert.ok(error instanceof BatonError, String(error))
    return error
  }
  assert.fail('expected a BatonError')
}

describe('store URL credentials', () => {
  it('a password with an unencoded "#" or "?" (also with "@" and "/") is parsed and never echoed (issue 15, defect 9)', () => {
    for (const secret of ['pa#ss', 'pa?ss', 'pa#ss@w/rd-1', 'x#y?z']) {
      const url = parseStoreUrl(`redis://app:${secret}@127.0.0.1:6379`)
      assert.equal(url.password, secret)
      assert.deepEqual(url.hosts, [{ host: '127.0.0.1', port: 6379 }])
      assert.ok(!url.display.includes(secret) && !maskUrl(`redis://app:${secret}@127.0.0.1:6379`).includes(secret))
      const bad = failure(() => parseStoreUrl(`redis://app:${secret}@127.0.0.1:99999`))
      assert.ok(!bad.message.includes(secret), bad.message)
      const shapeless = failure(() => parseStoreUrl(`redis://app:${secret}@@`))
      assert.ok(!shapeless.message.includes(secret), shapeless.message)
    }
  })

  it('parses passwords holding "@", "/" and ":" unescaped', () => {
    const url = parseStoreUrl('redis://app:s3cr/et@db.example:6380/2?prefix=p')
    assert.equal(url.username, 'app')
    assert.equal(url.password, 's3cr/et')
    assert.deepEqual(url.hosts, [{ host: 'db.example', port: 6380 }])
    assert.equal(url.path, '2')
    assert.equal(url.display, 'redis://app:***@db.example:6380/2?prefix=p')
    const tricky = parseStoreUrl('redis+cluster://ops:a@b/c:d@h1:7000,h2:7001')
    assert.equal(tricky.password, 'a@b/c:d')
    assert.equal(tricky.hosts.length, 2)
  })

  it('never shows a password, a lone user info or a secret parameter', () => {
    for (const secret of SECRETS) {
      for (const raw of [
        `redis://app:${secret}@h:6379`, `redis://:${secret}@h:6379/0`, `redis://${secret}@h`,
        `rediss://u:${secret}@h:1?ca=/x`, `redis+sentinel://u:${secret}@h1:1,h2:2/master`, `postgres://h/db?password=${secret}`,
      ]) {
        const shown = maskUrl(raw)
        assert.ok(!shown.includes(secret), `${shown} hides ${secret}`)
        let display: string
        try {
          display = parseStoreUrl(raw).display
        } catch (error) {
          display = (error as Error).message
        }
        assert.ok(!display.includes(secret), `${display} hides ${secret}`)
      }
    }
  })

  it('bad URLs are refused without echoing their credentials', () => {
    const cases = [
      'redis://app:s3cr/et@h:99999', 'redis://app:s3cr/et@h:x', 'redis://app:%E0%A4%A@h', 'nonsense app:s3cr/et@h',
      'redis://app:s3cr/et@[::1',
    ]
    for (const raw of cases) {
      const error = failure(() => parseStoreUrl(raw))
      assert.equal(error.code, 'INVALID_ARGUMENT')
      for (const secret of SECRETS) assert.ok(!error.message.includes(secret), `${error.message} hides ${secret}`)
    }
  })

  it('keeps the user name next to a masked password, for messages about authentication', () => {
    assert.equal(parseStoreUrl('redis://reader:pw@h').display, 'redis://reader:***@h')
    assert.equal(parseStoreUrl('redis://h:1').display, 'redis://h:1')
  })
})

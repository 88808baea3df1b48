import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { parseDuration } from '../../src/core/duration.js'
import { validateName } from '../../src/core/names.js'
import { parseStoreUrl } from '../../src/core/url.js'
import { BatonError, isBatonError } from '../../src/index.js'

describe('durations', () => {
  it('parses numbers as ms and unit strings', () => {
    assert.equal(parseDuration(250, 'ttl'), 250)
    assert.equal(parseDuration('250ms', 'ttl'), 250)
    assert.equal(parseDuration('30s', 'ttl'), 30_000)
    assert.equal(parseDuration('1.5s', 'ttl'), 1500)
    assert.equal(parseDuration('5m', 'ttl'), 300_000)
    assert.equal(parseDuration('2h', 'ttl'), 7_200_000)
    assert.equal(parseDuration(' 10s ', 'ttl'), 10_000)
    assert.equal(parseDuration(0.4, 'ttl'), 1, 'fractions round up, never to 0')
    assert.equal(parseDuration(0, 'wait', { allowZero: true }), 0)
  })
  it('quotes the bad input and names the setting', () => {
    assert.throws(() => parseDuration('abc', 'ttl'), (e) => isBatonError(e, 'INVALID_ARGUMENT') && e.message.includes('"ttl"') && e.message.includes('"abc"'))
    assert.throws(() => parseDuration(-1, 'wait'), /"wait" must not be negative/)
    assert.throws(() => parseDuration(0, 'ttl'), /greater than 0/)
    assert.throws(() => parseDuration(2 ** 31, 'ttl'), /at most/)
  })
})

describe('names', () => {
  it('accepts printable names up to 256 bytes', () => {
    assert.equal(validateName('orders/42'), 'orders/42')
    assert.equal(validateName('x'.repeat(256)), 'x'.repeat(256))
    assert.throws(() => validateName('é'.repeat(129)), /256 bytes/)
  })
})

describe('store URLs', () => {
  it('parses host lists, credentials, paths and params', () => {
    const url = parseStoreUrl('redis+cluster://user:p%40ss@h1:7000,h2:7001,[::1]:7002/x?prefix=app')
    assert.equal(url.scheme, 'redis+cluster')
    assert.equal(url.username, 'user')
    assert.equal(url.password, 'p@ss')
    assert.deepEqual(url.hosts, [{ host: 'h1', port: 7000 }, { host: 'h2', port: 7001 }, { host: '::1', port: 7002 }])
    assert.equal(url.path, 'x')
    assert.equal(url.params.get('prefix'), 'app')
    assert.ok(!url.display.includes('p%40ss'), 'the password is masked in messages')
    assert.deepEqual(parseStoreUrl('memory://').hosts, [])
  })
  it('rejects malformed URLs with INVALID_ARGUMENT', () => {
    for (const bad of ['', 'redis', 'redis:/x', 'redis://h:0', 'redis://h:70000', 'redis://h:x']) {
      assert.throws(() => parseStoreUrl(bad), (e) => e instanceof BatonError && e.code === 'INVALID_ARGUMENT', bad)
    }
  })
})

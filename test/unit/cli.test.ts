/** The CLI's pure helpers: time left, tables, JSON with bigint tokens, store and flag checks, exit codes. */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { EXIT, exitCodeOf, intFlag, parse, storeUrl, textTable, timeLeft, toJson, UsageError } from '../../src/cli/common.js'
import { BatonError } from '../../src/core/errors.js'

describe('cli helpers', () => {
  it('timeLeft reads like a person would say it', () => {
    assert.equal(timeLeft(1_000, 1_000), 'expired')
    assert.equal(timeLeft(5_432, 1_000), '4.4s')
    assert.equal(timeLeft(46_000, 1_000), '45s')
    assert.equal(timeLeft(1_000 + 245_000, 1_000), '4m05s')
    assert.equal(timeLeft(1_000 + 5_400_000, 1_000), '1.5h')
  })

  it('textTable pads columns and trims line ends', () => {
    assert.equal(textTable(['A', 'LONGER'], [['x', ''], ['yyy', 'z']]), 'A    LONGER\nx\nyyy  z')
  })

  it('toJson writes fencing tokens as decimal strings', () => {
    assert.equal(toJson({ token: 2n ** 64n }), '{\n  "token": "18446744073709551616"\n}')
  })

  it('storeUrl takes --store over BATON_URL and refuses memory:// unless allowed', () => {
    assert.equal(storeUrl('redis://a:1'), 'redis://a:1')
    assert.throws(() => storeUrl('memory://'), UsageError)
    assert.equal(storeUrl('memory://', true), 'memory://')
  })

  it('intFlag and parse turn bad input into usage errors', () => {
    assert.equal(intFlag('75', '-E', 0, 255), 75)
    for (const bad of ['256', '-1', '1.5', 'x', '']) assert.throws(() => intFlag(bad, '-E', 0, 255), UsageError)
    assert.throws(() => parse(['--nope'], {}, { min: 0, names: '' }), /Unknown option '--nope'/)
    assert.throws(() => parse([], {}, { min: 1, names: 'the lock name' }), /missing the lock name/)
    assert.equal(parse(['x', '--help'], {}, { min: 1, names: 'x' }), undefined)
    assert.deepEqual(parse(['x', '--', '--help'], {}, { min: 1, names: 'x' })?.positionals, ['x', '--help'])
  })

  it('maps error codes to exit codes', () => {
    assert.equal(exitCodeOf(new UsageError('x')), EXIT.usage)
    assert.equal(exitCodeOf(new BatonError('LOCK_TIMEOUT', 'x')), EXIT.conflict)
    assert.equal(exitCodeOf(new BatonError('BACKEND_UNAVAILABLE', 'x')), EXIT.unavailable)
    assert.equal(exitCodeOf(new BatonError('FORBIDDEN', 'x')), EXIT.noPermission)
    assert.equal(exitCodeOf(new Error('x')), EXIT.failure)
  })
})

/** The pure parts of the command line and of descriptions, without a store. */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { MAX_DESCRIPTION_BYTES } from '../../src/core/driver.js'
import { buildDescription } from '../../src/core/options.js'
import { publicOwner } from '../../src/core/owner.js'
import { durationFlag, formatDuration, splitCommand, UsageError, whoText } from '../../src/cli/common.js'

const OPTIONS = { ttl: { type: 'string' }, wait: { type: 'string', short: 'w' }, nonblock: { type: 'boolean', short: 'n' }, command: { type: 'string', short: 'c' } } as const

describe('command-line parsing', () => {
  it('takes everything after the name as the command; -- ends the options', () => {
    assert.deepEqual(splitCommand(['x', 'ls', '-l', 'f'], OPTIONS), { options: ['x'], command: ['ls', '-l', 'f'] })
    assert.deepEqual(splitCommand(['-w', '10', 'x', 'echo', 'hi'], OPTIONS), { options: ['-w', '10', 'x'], command: ['echo', 'hi'] })
    assert.deepEqual(splitCommand(['x', '--ttl', '20s', '--', 'sh', '-c', 'exit 5'], OPTIONS), { options: ['x', '--ttl', '20s'], command: ['sh', '-c', 'exit 5'] })
    assert.deepEqual(splitCommand(['--', 'true'], OPTIONS), { options: [], command: ['true'] })
    assert.deepEqual(splitCommand(['x', '-c', 'a && b'], OPTIONS), { options: ['x', '-c', 'a && b'], command: [] })
    assert.deepEqual(splitCommand(['-nw', '5', 'x', 'git', 'log', '--', 'f'], OPTIONS), { options: ['-nw', '5', 'x'], command: ['git', 'log', '--', 'f'] })
  })

  it('reads bare numbers as seconds and keeps units', () => {
    assert.equal(durationFlag('10', '-w'), 10_000)
    assert.equal(durationFlag('1.5', '--ttl'), 1500)
    assert.equal(durationFlag('250ms', '--ttl'), 250)
    assert.equal(durationFlag('2m', '--ttl'), 120_000)
    assert.equal(durationFlag('0', '--wait', true), 0)
    assert.throws(() => durationFlag('soon', '--ttl'), (e: unknown) => e instanceof UsageError && /--ttl must be a number of seconds/.test(e.message))
  })

  it('formats durations as the flags are written', () => {
    assert.deepEqual([250, 5000, 45_000, 572_000, 7_500_000].map(formatDuration), ['250ms', '5s', '45s', '9m32s', '2h05m'])
  })
})

describe('descriptions', () => {
  it('stay within MAX_DESCRIPTION_BYTES, shortening the command first, and stay JSON', () => {
    const long = buildDescription({ host: 'web-1', pid: 42, client: 'baton run', cmd: `./deploy.sh ${'é'.repeat(400)}` })
    assert.ok(Buffer.byteLength(long) <= MAX_DESCRIPTION_BYTES, `${Buffer.byteLength(long)} bytes`)
    const parsed = JSON.parse(long) as { host: string; pid: number; client: string; cmd: string }
    assert.equal(parsed.host, 'web-1')
    assert.equal(parsed.client, 'baton run')
    assert.match(parsed.cmd, /^\.\/deploy\.sh é+…$/)
    assert.equal(whoText(long).startsWith('web-1 pid 42 baton run: ./deploy.sh'), true)
  })

  it('one owner id: a lock server\'s secret owner is shown as its digest, any other as itself', () => {
    assert.equal(publicOwner('gMZXrY0y.rsE21'), 'gMZXrY0y.rsE21')
    const secret = `gMZXrY0y.${'A'.repeat(22)}`
    assert.match(publicOwner(secret), /^[A-Za-z0-9_-]{16}$/)
    assert.notEqual(publicOwner(secret), secret)
  })
})

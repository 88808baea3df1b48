/**
 * What the shipped bin (dist/cli/baton.js) does for a quick start, checked
 * for behaviour only (timings are bench/scenarios/cli-startup.ts's business):
 * its V8 code cache (scripts/cli-bin.cjs), written by a short command's first
 * run in the user's cache directory, used by later runs, and harmless when
 * damaged, unwritable or turned off; and what the bundle loads on first use
 * only (scripts/bundle-cli.mjs): `tls` for rediss://, ioredis' Cluster client.
 */
import assert from 'node:assert/strict'
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { startRedis, startRedisCluster, type RedisServer } from '../harness/servers.js'
import { startTlsRedis } from '../harness/tls.js'
import { baton } from './baton-cli.js'

let redis: RedisServer
let scratch: string

before(async () => {
  redis = await startRedis()
  scratch = mkdtempSync(join(tmpdir(), 'baton-code-cache-'))
})
after(async () => {
  await redis?.stop()
  rmSync(scratch, { recursive: true, force: true })
})

/** A fresh XDG_CACHE_HOME and the environment that points the bin at it. */
function cacheHome(label: string): { dir: string; env: Record<string, string | undefined> } {
  const home = join(scratch, label)
  mkdirSync(home)
  return { dir: join(home, 'baton'), env: { BATON_URL: redis.url, XDG_CACHE_HOME: home, NODE_DISABLE_COMPILE_CACHE: undefined } }
}

const files = (dir: string): string[] => {
  try {
    return readdirSync(dir)
  } catch {
    return []
  }
}

describe('the shipped baton bin', () => {
  it('is written by the first `baton run` and reused, unchanged, by the next', async () => {
    const { dir, env } = cacheHome('reuse')
    // Left by another build of baton: replaced, not kept beside the new one.
    mkdirSync(dir)
    writeFileSync(join(dir, 'cli-0123456789abcdef-run-v20.0.0-x64.v8cache'), 'old')
    writeFileSync(join(dir, 'cli-0123456789abcdef-ls-v20.0.0-x64.v8cache'), 'old')
    const first = await baton(['run', 'cache/reuse', '--', 'true'], env)
    assert.equal(first.code, 0, first.stderr)
    const written = files(dir).filter((f) => !f.includes('-ls-'))
    assert.equal(written.length, 1, `one cache file for run, got ${written.join(', ')}`)
    assert.match(written[0]!, /^cli-[0-9a-f]{16}-run-v\d+\.\d+\.\d+-\w+\.v8cache$/)
    const bytes = readFileSync(join(dir, written[0]!))
    const second = await baton(['run', 'cache/reuse', '--', 'true'], env)
    assert.equal(second.code, 0, second.stderr)
    assert.deepEqual(files(dir).sort(), ['cli-0123456789abcdef-ls-v20.0.0-x64.v8cache', ...written].sort(), "another command's cache stays")
    assert.ok(readFileSync(join(dir, written[0]!)).equals(bytes), 'an accepted cache is not rewritten')
  })

  it('ignores and replaces a damaged cache', async () => {
    const { dir, env } = cacheHome('damaged')
    assert.equal((await baton(['run', 'cache/damaged', '--', 'true'], env)).code, 0)
    const [name] = files(dir)
    writeFileSync(join(dir, name!), 'not a V8 code cache')
    const result = await baton(['run', 'cache/damaged', '--', 'sh', '-c', 'exit 4'], env)
    assert.equal(result.code, 4, result.stderr)
    assert.equal(result.stderr, '')
    assert.notEqual(readFileSync(join(dir, name!), 'utf8'), 'not a V8 code cache')
  })

  it('runs without one when the cache directory cannot be written, or with NODE_DISABLE_COMPILE_CACHE=1', async (t) => {
    const readOnly = cacheHome('read-only')
    writeFileSync(readOnly.dir, 'a file where the directory would go')
    const blocked = await baton(['run', 'cache/blocked', '--', 'true'], readOnly.env)
    assert.equal(blocked.code, 0, blocked.stderr)
    assert.equal(blocked.stderr, '')

    const off = cacheHome('off')
    const disabled = await baton(['run', 'cache/off', '--', 'true'], { ...off.env, NODE_DISABLE_COMPILE_CACHE: '1' })
    assert.equal(disabled.code, 0, disabled.stderr)
    assert.deepEqual(files(off.dir), [])

    if (process.getuid?.() === 0) return t.diagnostic('running as root: a mode-0500 directory is writable anyway')
    const locked = cacheHome('locked')
    mkdirSync(locked.dir)
    chmodSync(locked.dir, 0o500)
    const result = await baton(['run', 'cache/locked', '--', 'true'], locked.env)
    assert.equal(result.code, 0, result.stderr)
    assert.deepEqual(files(locked.dir), [], 'no temporary file left behind')
  })

  it('is kept for the short commands only, one per command', async () => {
    const { dir, env } = cacheHome('commands')
    assert.equal((await baton(['--help'], env)).code, 0)
    assert.deepEqual(files(dir), [])
    const ls = await baton(['ls'], env)
    assert.equal(ls.code, 0, ls.stderr)
    assert.equal((await baton(['run', 'cache/commands', '--', 'true'], env)).code, 0)
    assert.deepEqual(files(dir).map((f) => f.split('-')[2]).sort(), ['ls', 'run'])
  })

  it('reaches a rediss:// store through the tls module it loads on first use', async () => {
    const { server, url, certificates } = await startTlsRedis()
    try {
      const result = await baton(['run', 'cache/tls', '--store', url, '--', 'sh', '-c', 'echo "$BATON_TOKEN"'], { BATON_URL: undefined })
      assert.equal(result.code, 0, result.stderr)
      assert.match(result.stdout, /^\d+\n$/)
    } finally {
      await server.stop()
      rmSync(certificates.dir, { recursive: true, force: true })
    }
  })

  it('reaches a redis+cluster:// store through the Cluster client it loads on first use', async () => {
    const cluster = await startRedisCluster(3)
    try {
      const result = await baton(['run', 'cache/cluster', '--store', cluster.url, '--', 'sh', '-c', 'echo "$BATON_TOKEN"'], { BATON_URL: undefined })
      assert.equal(result.code, 0, result.stderr)
      assert.match(result.stdout, /^\d+\n$/)
      const listed = await baton(['inspect', 'cache/cluster', '--store', cluster.url], { BATON_URL: undefined })
      assert.equal(listed.code, 3, `released after the command: ${listed.stdout}${listed.stderr}`)
    } finally {
      await cluster.stop()
    }
  })
})

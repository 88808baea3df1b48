/**
 * The `baton` commands against a baton server (`http://` store) with bearer
 * tokens: the token travels in the store URL, a missing or weak token exits
 * 77, and a forced release by an admin stops a `baton run` on another client.
 */
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { startBatonServer, tempDir, type BatonServer } from '../harness/baton-server.js'
import { startRedis, type RedisServer } from '../harness/servers.js'
import { baton, nodeCommand, startBaton } from './baton-cli.js'

const LOCKER = 'cli-locker-token-0123456789'
const ADMIN = 'cli-admin-token-0123456789ab'

let redis: RedisServer
let server: BatonServer
const storeWith = (token?: string) => server.base.replace('http://', `http://${token ? `${token}@` : ''}`)

before(async () => {
  redis = await startRedis()
  const tokens = join(tempDir('cli-http'), 'tokens.json')
  writeFileSync(tokens, JSON.stringify([{ token: LOCKER, rights: ['lock'] }, { token: ADMIN, rights: ['admin'] }]))
  server = await startBatonServer(['--store', redis.url, '--tokens', tokens])
})
after(async () => {
  await server?.stop()
  await redis?.stop()
})

describe('baton commands on a baton server (http://)', () => {
  it('runs a command under a lock held through the server', async () => {
    const result = await baton(['run', 'web/deploy', '--', ...nodeCommand('console.log("token", process.env.BATON_TOKEN)')], { BATON_URL: storeWith(LOCKER) })
    assert.equal(result.code, 0, result.stderr)
    assert.match(result.stdout, /^token \d+$/m)
  })

  it('exits 77 without a valid token and does not show it', async () => {
    const none = await baton(['ls'], { BATON_URL: storeWith() })
    assert.equal(none.code, 77, none.stderr)
    assert.match(none.stderr, /UNAUTHORIZED/)
    const wrong = await baton(['ls'], { BATON_URL: storeWith('not-a-valid-token-at-all') })
    assert.equal(wrong.code, 77, wrong.stderr)
    assert.doesNotMatch(wrong.stderr, /not-a-valid-token-at-all/)
  })

  it('force-releases with an admin token only; the holding baton run stops its command', async () => {
    const run = startBaton(['run', 'web/cron', '--', ...nodeCommand('setInterval(() => {}, 1000)')], { BATON_URL: storeWith(LOCKER) })
    await run.waitForOutput('ready')
    const listed = JSON.parse((await baton(['ls', '--json'], { BATON_URL: storeWith(LOCKER) })).stdout) as { name: string; holders: { owner: string }[] }[]
    assert.deepEqual(listed.map((l) => l.name), ['web/cron'])
    const refused = await baton(['release', '--force', 'web/cron'], { BATON_URL: storeWith(LOCKER) })
    assert.equal(refused.code, 77, refused.stderr)
    assert.match(refused.stderr, /FORBIDDEN/)
    const forced = await baton(['release', '--force', 'web/cron'], { BATON_URL: storeWith(ADMIN) })
    assert.equal(forced.code, 0, forced.stderr)
    const result = await run.finished
    assert.equal(result.code, 70, result.stderr)
    assert.match(result.stderr, /was lost/)
  })
})

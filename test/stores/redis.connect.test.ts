/**
 * What connect() says when the Redis URL does not fit the server: refused
 * credentials and missing databases are reported as such, at once, and no
 * message shows a password.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { inspect } from 'node:util'
import { connect, isBatonError } from '../../src/index.js'
import { redisCommand, startRedis, stopAll, type RedisServer } from '../harness/servers.js'
import { ms } from '../harness/timing.js'

let server: RedisServer
const PASSWORD = 's3cr/et@x'
const APP_PASSWORD = 'app:p@ss/word'

before(async () => {
  server = await startRedis()
  assert.equal(await redisCommand(server.port, ['ACL', 'SETUSER', 'app', 'on', `>${APP_PASSWORD}`, '~*', '&*', '+@all']), 'OK')
  assert.equal(await redisCommand(server.port, ['CONFIG', 'SET', 'requirepass', PASSWORD]), 'OK')
})
after(() => stopAll())

const at = (auth: string, path = ''): string => `redis://${auth}127.0.0.1:${server.port}${path}`

async function refusal(url: string): Promise<unknown> {
  const started = performance.now()
  const error = await connect(url, { connectTimeout: ms(10_000) }).catch((e: unknown) => e)
  assert.ok(performance.now() - started < ms(5000), 'reported at once, not after the connect timeout')
  return error
}

describe('redis connect: credentials and databases', () => {
  it('a wrong password is UNAUTHORIZED, not retryable, names the user and never the password', async () => {
    const error = await refusal(at('app:wrong%2Fpass@'))
    assert.ok(isBatonError(error, 'UNAUTHORIZED'), String(error))
    assert.equal(error.retryable, false)
    assert.match(error.message, /"app"/)
    assert.doesNotMatch(error.message, /wrong|connectTimeout/)
  })

  it('a missing password is UNAUTHORIZED and says the URL gives none', async () => {
    const error = await refusal(at(''))
    assert.ok(isBatonError(error, 'UNAUTHORIZED'), String(error))
    assert.match(error.message, /requires a password/)
  })

  it('the right credentials, with "@", "/" and ":" unescaped in the password, connect; inspecting the client shows no password', async () => {
    for (const url of [at(`app:${APP_PASSWORD}@`), at(`:${PASSWORD}@`), at(`default:${encodeURIComponent(PASSWORD)}@`)]) {
      const baton = await connect(url)
      const lease = await baton.mutex('auth/ok').acquire()
      const shown = inspect(baton, { depth: 20 }) + inspect(lease, { depth: 20 }) + JSON.stringify(await baton.inspect('auth/ok'), (_, v) => (typeof v === 'bigint' ? String(v) : v))
      for (const secret of [PASSWORD, APP_PASSWORD, encodeURIComponent(PASSWORD)]) assert.ok(!shown.includes(secret), 'no password in inspect output')
      await lease.release()
      await baton.close()
    }
  })

  it('a database the server does not have is refused with its number and the count the server has', async () => {
    const error = await refusal(at(`app:${APP_PASSWORD}@`, '/99'))
    assert.ok(isBatonError(error, 'INVALID_ARGUMENT'), String(error))
    assert.match(error.message, /database 99/)
    assert.match(error.message, /16/)
    assert.doesNotMatch(error.message, /p@ss/)
    const fine = await connect(at(`app:${APP_PASSWORD}@`, '/15'))
    await fine.close()
  })
})

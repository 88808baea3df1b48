/**
 * The baseline of the server benchmark: a bare node:http server answering
 * the benchmark's chained requests with bodies of the same shape and size
 * as the lock server's (a Grant for the POST, `{"released":true}` for the
 * DELETE), with the same content type. Run as its own process; prints
 * "listening <port>".
 *
 * With a Redis URL as argument it also does the least a lock on Redis must
 * do per request (context for the Redis figure, not the bound): the POST
 * takes `SET name value NX PX 10000`, the DELETE a Lua compare-and-delete (plain EVALSHA),
 * on one ioredis connection; the lease id carries the name and the value.
 */
import { randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { Redis } from 'ioredis'
import { compareAndDelete, loadCompareAndDelete } from './raw-redis.js'

const CONTENT_TYPE = 'application/json; charset=utf-8'
const RELEASED = JSON.stringify({ released: true })
const grant = (leaseId: string, name: string) =>
  JSON.stringify({ leaseId, name, token: '1', expiresAt: Date.now() + 10_000, ttlMs: 9999, owner: 'o'.repeat(16), mode: 'exclusive' })
// A lease id as long as the server's for the benchmark's names (~80 base64url characters).
const GRANT = grant('A'.repeat(80), 'pairs-000000-0/0')

function answer(response: ServerResponse, body: string, status = 200): void {
  response.writeHead(status, { 'content-type': CONTENT_TYPE, 'content-length': Buffer.byteLength(body) })
  response.end(body)
}

const redisUrl = process.argv[2]
let redis: Redis | undefined
if (redisUrl) {
  redis = new Redis(redisUrl)
  await loadCompareAndDelete(redis)
}
const ACQUIRE = /^\/v1\/locks\/([^/]+)\/acquire$/
const LEASE = /^\/v1\/leases\/([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)$/

/** The raw-Redis form: one SET NX PX or one compare-and-delete per request. */
async function withRedis(client: Redis, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const url = request.url ?? ''
  const acquire = request.method === 'POST' ? ACQUIRE.exec(url) : null
  if (acquire) {
    const name = decodeURIComponent(acquire[1]!)
    const value = randomBytes(16).toString('base64url')
    const ok = await client.set(`raw:${name}`, value, 'PX', 10_000, 'NX')
    if (ok !== 'OK') return answer(response, '{"error":{"code":"LOCK_TIMEOUT"}}', 409)
    return answer(response, grant(`${Buffer.from(name).toString('base64url')}.${value}`, name))
  }
  const lease = request.method === 'DELETE' ? LEASE.exec(url) : null
  if (lease) {
    const released = await compareAndDelete(client, `raw:${Buffer.from(lease[1]!, 'base64url').toString()}`, lease[2]!)
    return answer(response, JSON.stringify({ released: released === 1 }))
  }
  answer(response, '{"error":{"code":"NOT_FOUND"}}', 404)
}

const server = createServer((request, response) => {
  request.resume()
  request.on('end', () => {
    if (redis) return void withRedis(redis, request, response).catch(() => answer(response, '{"error":{"code":"INTERNAL"}}', 500))
    answer(response, request.method === 'DELETE' ? RELEASED : GRANT)
  })
})
server.listen(0, '127.0.0.1', () => {
  const address = server.address()
  console.log(`listening ${typeof address === 'object' && address ? address.port : 0}`)
})

/**
 * A client generated from the server's OpenAPI document, in TypeScript:
 *
 *   npx openapi-typescript http://127.0.0.1:7420/openapi.json -o baton-api.d.ts
 *   npm install openapi-fetch
 *   npx tsx hold.ts NAME          (in an ES-module project: "type": "module")
 *
 * waits for the lock NAME, renews it once, hands its
 * fencing token on, and releases it. BATON_SERVER and BATON_TOKEN as for the
 * other examples. (In a Node program, the baton library itself does all of
 * this and more; this is what any language's generated client looks like.)
 */
import createClient from 'openapi-fetch'
import type { paths } from './baton-api.js'

const server = process.env.BATON_SERVER ?? 'http://127.0.0.1:7420'
const token = process.env.BATON_TOKEN
const client = createClient<paths>({ baseUrl: server, headers: token ? { authorization: `Bearer ${token}` } : {} })
const name = process.argv[2] ?? 'demo/typescript'

/** Whatever the lock protects; it should refuse a token smaller than one it has seen. */
function protectedWrite(fencingToken: string): void {
  console.log(JSON.stringify({ step: 'write', token: fencingToken }))
}

// A long wait may outlast the server's longest poll (--poll-max): it then answers
// 202 { state: 'waiting', waitId }, and the same request with that waitId keeps the place.
let waitId: string | undefined
let acquired
for (;;) {
  acquired = await client.POST('/v1/locks/{name}/acquire', {
    params: { path: { name } },
    body: { ttl: '10s', wait: '30s', ...(waitId ? { waitId } : {}) },
  })
  if (acquired.error || !('state' in acquired.data)) break
  waitId = acquired.data.waitId
}
if (acquired.error) {
  // The error's code is an enum in the generated types: LOCK_TIMEOUT, UNAUTHORIZED, ...
  console.error(`not acquired: ${acquired.error.error.code}: ${acquired.error.error.message}`)
  process.exit(acquired.error.error.code === 'LOCK_TIMEOUT' ? 75 : 1)
}
const answer = acquired.data
if ('state' in answer) throw new Error('still waiting') // the loop above only ends on a grant or an error
const grant = answer
console.log(JSON.stringify({ step: 'granted', token: grant.token, ttlMs: grant.ttlMs }))
protectedWrite(grant.token)

const renewed = await client.POST('/v1/leases/{leaseId}/extend', {
  params: { path: { leaseId: grant.leaseId } },
  body: { ttl: '10s' },
})
if (renewed.error) throw new Error(`renewal failed: ${renewed.error.error.code}`)
console.log(JSON.stringify({ step: 'renewed', token: renewed.data.token, ttlMs: renewed.data.ttlMs }))

const released = await client.DELETE('/v1/leases/{leaseId}', { params: { path: { leaseId: grant.leaseId } } })
if (released.error) throw new Error(`release failed: ${released.error.error.code}`)
console.log(JSON.stringify({ step: 'released', released: released.data.released }))

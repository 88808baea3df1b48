/**
 * Two lock servers in one process on one named memory store (the only way
 * two servers share a memory store): a release or forced release through
 * one is reported by the server that granted the lease at once.
 */
import { after, before, describe, it } from 'node:test'
import { connect } from '../../src/index.js'
import { createLockServer, type LockServer } from '../../src/server/index.js'
import { releasedThroughOther } from './released-elsewhere.js'

const servers: LockServer[] = []
const bases: string[] = []

before(async () => {
  const store = `memory://shared-${process.pid}-${Date.now()}`
  for (let i = 0; i < 2; i++) {
    const server = await createLockServer({ baton: await connect(store) })
    servers.push(server)
    bases.push((await server.listen('127.0.0.1', 0)).replace('localhost', '127.0.0.1'))
  }
})
after(async () => {
  await Promise.all(servers.map((server) => server.close()))
})

describe('two servers sharing a memory store (in one process)', () => {
  it('a lease released through the other server is reported by its own server as a release, at once', async () => {
    await releasedThroughOther(bases[0]!, bases[1]!, 'release')
  })

  it('a lease forced through the other server is reported by its own server as lost, at once', async () => {
    await releasedThroughOther(bases[1]!, bases[0]!, 'force')
  })
})

/**
 * Leader election through two lock servers sharing one store: a lease id is
 * good on either server (servers are stateless), so a proclaim through the
 * server that did not grant the leadership must reach it, and a proclaim on
 * a plain exclusive lease (a mutex: a candidate without a value) too. Each
 * answered 410 on etcd (and the first on ZooKeeper), telling the client it
 * had lost a leadership it still held.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { serversOn } from '../harness/lock-servers.js'
import { startEtcd } from '../harness/etcd.js'
import { startPostgres } from '../harness/postgres.js'
import { startRedis } from '../harness/servers.js'
import { startZookeeper } from '../harness/zookeeper.js'
import { call, lockPath } from '../server/client.js'

const electionPath = (name: string, suffix = ''): string => `/v1/elections/${encodeURIComponent(name)}${suffix}`

const stores: Record<string, () => Promise<{ url: string; stop(): Promise<void> }>> = {
  'etcd://': startEtcd,
  'zk://': async () => {
    const zk = await startZookeeper()
    return { url: `zk://${zk.hosts}/servers`, stop: () => zk.stop() }
  },
  'postgres://': startPostgres,
  'redis://': startRedis,
}

for (const [label, start] of Object.entries(stores)) {
  describe(`proclaim through two servers sharing ${label}`, () => {
    let store: { url: string; stop(): Promise<void> }
    // One operator-given secret: this file is about proclaim through another
    // server; servers agreeing on a secret kept in the store is shared-secret.test's.
    const shared = serversOn(() => store.url, { leaseSecret: 'election-servers-shared-secret' })
    const servers = shared.servers

    before(async () => {
      store = await start()
      await shared.add()
      await shared.add()
    })
    after(async () => {
      await shared.close()
      await store?.stop()
    })

    it('a campaign won on one server is proclaimed on the other, and stays held', async () => {
      const [one, two] = servers as [typeof servers[0], typeof servers[0]]
      const name = `servers/campaign/${Date.now()}`
      const won = await call(one.base, 'POST', electionPath(name, '/campaign'), { value: 'a', ttl: '10s' })
      assert.equal(won.status, 200)
      const proclaimed = await call(two.base, 'POST', electionPath(name, '/proclaim'), { leaseId: won.body.leaseId, value: 'b' })
      assert.deepEqual([proclaimed.status, proclaimed.body], [200, { proclaimed: true }])
      for (const { base } of servers) assert.equal((await call(base, 'GET', electionPath(name))).body.leader?.value, 'b')
      // The granting server's client still holds it: renewals and its own proclaims go on.
      assert.equal((await call(one.base, 'POST', `/v1/leases/${won.body.leaseId}/extend`, { ttl: '10s' })).status, 200)
      assert.equal((await call(one.base, 'POST', electionPath(name, '/proclaim'), { leaseId: won.body.leaseId, value: 'c' })).status, 200)
      assert.equal((await call(two.base, 'GET', electionPath(name))).body.leader?.value, 'c')
      // (Renewals and releases go through the granting server: on etcd and ZooKeeper only the client that holds may.)
      assert.deepEqual((await call(one.base, 'POST', electionPath(name, '/resign'), { leaseId: won.body.leaseId })).body, { released: true })
      assert.equal((await call(one.base, 'POST', electionPath(name, '/proclaim'), { leaseId: won.body.leaseId, value: 'd' })).status, 410, 'a resigned leadership is gone')
    })

    it('a plain exclusive lease is proclaimed on either server', async () => {
      const [one, two] = servers as [typeof servers[0], typeof servers[0]]
      const name = `servers/plain/${Date.now()}`
      const lease = await call(one.base, 'POST', lockPath(name, '/acquire'), { ttl: '10s' })
      assert.equal(lease.status, 200)
      assert.equal((await call(one.base, 'POST', electionPath(name, '/proclaim'), { leaseId: lease.body.leaseId, value: 'x' })).status, 200)
      assert.equal((await call(two.base, 'GET', electionPath(name))).body.leader?.value, 'x')
      assert.equal((await call(two.base, 'POST', electionPath(name, '/proclaim'), { leaseId: lease.body.leaseId, value: 'y' })).status, 200)
      assert.equal((await call(one.base, 'GET', electionPath(name))).body.leader?.value, 'y')
      assert.equal((await call(one.base, 'POST', `/v1/leases/${lease.body.leaseId}/extend`, { ttl: '10s' })).status, 200)
      assert.deepEqual((await call(one.base, 'DELETE', `/v1/leases/${lease.body.leaseId}`)).body, { released: true })
    })
  })
}

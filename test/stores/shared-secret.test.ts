/**
 * Lock servers sharing a store and given no `--lease-secret` agree on one
 * secret kept in the store (src/server/lease-secret.ts), on every store that
 * keeps a value beside a hold: a lease id one grants is authentic on the
 * other. ZooKeeper refused the secret's day-long hold (no hold outlives the
 * ensemble's longest session), so each of its servers kept a secret of its
 * own and refused the other's ids as forged.
 *
 * What the other server can then do with the lease is the store's to say:
 * on PostgreSQL and MySQL any client renews and releases a hold; on etcd and
 * ZooKeeper a hold lives in its granting client's session, so the other
 * server answers that the lease is not its to keep (410 on renewal,
 * released: false) — never 404, which says "not an id of this store".
 */
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { serversOn } from '../harness/lock-servers.js'
import { startEtcd } from '../harness/etcd.js'
import { startMariadb } from '../harness/mariadb.js'
import { startPostgres } from '../harness/postgres.js'
import { startZookeeper } from '../harness/zookeeper.js'
import { call, lockPath } from '../server/client.js'

interface Store { url: string; stop(): Promise<void> }
const stores: { label: string; start: () => Promise<Store>; sessionBound: boolean }[] = [
  { label: 'etcd://', start: startEtcd, sessionBound: true },
  {
    label: 'zk://',
    start: async () => {
      const zk = await startZookeeper()
      return { url: `zk://${zk.hosts}/servers`, stop: () => zk.stop() }
    },
    sessionBound: true,
  },
  { label: 'postgres://', start: startPostgres, sessionBound: false },
  { label: 'mysql://', start: startMariadb, sessionBound: false },
]

for (const { label, start, sessionBound } of stores) {
  describe(`two servers sharing ${label}, no --lease-secret`, () => {
    let store: Store | undefined
    const shared = serversOn(() => store!.url)
    after(async () => {
      await shared.close()
      await store?.stop()
    })

    it('a lease id granted by one is authentic on the other', async () => {
      store = await start()
      const [one, two] = [await shared.add(), await shared.add()]
      const lease = await call(one, 'POST', lockPath('shared-secret/a', '/acquire'), { ttl: '30s' })
      assert.equal(lease.status, 200)
      const id = lease.body.leaseId as string
      const renewed = await call(two, 'POST', `/v1/leases/${id}/extend`, {})
      if (sessionBound) {
        assert.equal(renewed.status, 410, JSON.stringify(renewed.body))
        assert.equal((await call(two, 'DELETE', `/v1/leases/${id}`)).body.released, false)
        assert.equal((await call(one, 'DELETE', `/v1/leases/${id}`)).body.released, true)
      } else {
        assert.equal(renewed.status, 200, JSON.stringify(renewed.body))
        assert.equal((await call(two, 'DELETE', `/v1/leases/${id}`)).body.released, true)
      }
      // An id edited by one character is still refused as not of this store.
      const edited = id.slice(0, -2) + (id.at(-2) === 'A' ? 'B' : 'A') + id.at(-1)
      assert.equal((await call(two, 'POST', `/v1/leases/${edited}/extend`, {})).status, 404)
    })
  })
}

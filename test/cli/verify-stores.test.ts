/**
 * `baton verify` through the shipped bin passes on every store of the suite
 * with pauses and kills injected. Its own file: seven whole runs, each with
 * its store started, are most of a file's time on a busy machine.
 */
import { after, describe, it } from 'node:test'
import { startRedis, stopAll } from '../harness/servers.js'
import { startRedlock } from '../harness/redlock.js'
import { startMariadb } from '../harness/mariadb.js'
import { startPostgres } from '../harness/postgres.js'
import { startEtcd } from '../harness/etcd.js'
import { startZookeeper } from '../harness/zookeeper.js'
import { startBatonServer } from '../harness/baton-server.js'
import { assertPassed, verify } from './verify-run.js'

after(() => stopAll())

describe('baton verify', () => {
  const stores: Array<[string, () => Promise<string>]> = [
    ['redis://', async () => (await startRedis()).url],
    ['redlock:// (3 nodes)', async () => (await startRedlock(3)).url],
    ['postgres://', async () => { const pg = await startPostgres(); after(() => pg.stop()); return pg.url }],
    ['mysql:// (MariaDB)', async () => { const db = await startMariadb(); after(() => db.stop()); return db.url }],
    ['etcd://', async () => { const etcd = await startEtcd(); after(() => etcd.stop()); return etcd.url }],
    ['zk://', async () => { const zk = await startZookeeper(); after(() => zk.stop()); return `zk://${zk.hosts}/verify` }],
    ['http:// (server on memory)', async () => (await startBatonServer()).base],
  ]
  for (const [label, start] of stores) {
    it(`passes on ${label} with holders paused past their ttl and killed`, async () => {
      const { code, report } = await verify(await start())
      assertPassed(code, report)
    })
  }
})

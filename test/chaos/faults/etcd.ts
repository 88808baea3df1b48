/**
 * The etcd chaos stores: one member (`etcd`), or three (`etcd-cluster`,
 * each member behind its own proxy) with a member killed (-9) and started
 * again on its data directory, or two of them (a majority) lost for a few
 * seconds. Neither keeps a property from holding: no exception covers them.
 */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { answersLinearizableRead, startEtcd, startEtcdCluster, type EtcdCluster } from '../../harness/etcd.js'
import type { ChaosStore, StoreFault } from '../store.js'
import { majorityLoss } from './majority.js'

/** Watches older than the compacted revision are cancelled: the driver must watch again from now and re-read. */
function compaction(etcd: EtcdCluster): StoreFault {
  return async () => {
    const endpoints = etcd.members.map((m) => m.endpoint).join(',')
    const etcdctl = (...args: string[]) => promisify(execFile)('etcdctl', ['--endpoints', endpoints, ...args], { env: { ...process.env, ETCDCTL_API: '3' } })
    const status = JSON.parse((await etcdctl('endpoint', 'status', '--write-out=json')).stdout) as { Status: { header: { revision: number } } }[]
    const revision = Math.max(...status.map((s) => s.Status.header.revision))
    await etcdctl('compaction', String(revision))
    return `compacted to revision ${revision} (every older revision gone, watches behind it cancelled)`
  }
}

export async function startEtcdStore(): Promise<ChaosStore> {
  const etcd = await startEtcd()
  const member = etcd.members[0]!
  return { kind: 'etcd', url: etcd.url, proxyPorts: [member.port], close: () => etcd.stop(),
    faults: {
      'store-restart': async () => { await member.restart(); return 'etcd killed (-9) and started again' },
      compaction: compaction(etcd),
    } }
}

export async function startEtcdClusterStore(): Promise<ChaosStore> {
  const etcd = await startEtcdCluster(3)
  return { kind: 'etcd-cluster', url: etcd.url, proxyPorts: etcd.members.map((m) => m.port), close: () => etcd.stop(),
    faults: {
      compaction: compaction(etcd),
      // The leader or a follower (seeded), down for ½ to 2 ttl. Healed once it
      // answers a linearizable read again (restart() waits for one): it has
      // rejoined and caught up with the others.
      'member-kill': async (random, _names, run) => {
        const leader = await etcd.leader()
        const victim = random.next() < 0.5 ? leader : random.pick(etcd.members.filter((m) => m !== leader))
        const downMs = random.int(Math.round(run.ttlMs / 2), run.ttlMs * 2)
        await victim.restart({ downMs })
        return `${victim === leader ? 'leader' : 'follower'} ${victim.name} (:${victim.port}) killed (-9), down ${downMs} ms, started again on its data directory`
      },
      'majority-loss': majorityLoss({ members: etcd.members, label: (m) => `${m.name} (:${m.port})`, serving: (m) => answersLinearizableRead(m.port) }),
    } }
}

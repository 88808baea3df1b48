/**
 * The ZooKeeper chaos stores: one server (`zookeeper`), or an ensemble of
 * three (`zookeeper-ensemble`, on demand: three JVMs are more than CI's two
 * cores carry beside the rest), and their faults: a client process's
 * sessions expired by the server, the leader killed, two of three servers
 * (a majority) lost for a few seconds.
 */
import { fourLetter, startZookeeper, startZookeeperEnsemble, ZK_TICK_MS, type ZkEnsemble } from '../../harness/zookeeper.js'
import { ms } from '../../harness/timing.js'
import type { ChaosStore, StoreFault } from '../store.js'
import { majorityLoss } from './majority.js'

const sleep = (delay: number) => new Promise((resolve) => setTimeout(resolve, delay))

/** Sessions each server's tracker expired so far (mntr's zk_stale_sessions_expired; undefined: not answering). */
async function expiredSessions(zk: ZkEnsemble): Promise<(number | undefined)[]> {
  return Promise.all(zk.servers.map(async (s) => {
    const mntr = await fourLetter(s.port, 'mntr').catch(() => '')
    const n = /^zk_stale_sessions_expired\s+(\d+)/m.exec(mntr)?.[1]
    return n === undefined ? undefined : Number(n)
  }))
}

/**
 * A client process stopped (SIGSTOP) until the server has expired a session
 * (its tracker's count went up) and at least the hold sessions' timeout
 * (the driver asks the ttl rounded up to whole seconds) plus two ticks has
 * passed: the holds it believed it had are gone and others may take them.
 * Healed when it resumes; it must see every hold as lost, none held past it.
 */
function sessionExpiry(zk: ZkEnsemble): StoreFault {
  return async (random, _names, run) => {
    const alive = [...run.children()]
    if (alive.length === 0) return 'no client process alive: nothing done'
    const [index, proc] = random.pick(alive)
    const sessionMs = Math.max(2 * ZK_TICK_MS, Math.max(1000, Math.ceil(run.ttlMs / 1000) * 1000))
    const before = await expiredSessions(zk)
    const stoppedAt = Date.now()
    proc.kill('SIGSTOP')
    // Waiting in its socket when it resumes: read before its timers run.
    if (proc.connected) proc.send({ type: 'probe' })
    await sleep(sessionMs + 2 * ZK_TICK_MS)
    let expired = 0
    const until = Date.now() + ms(20_000)
    while (Date.now() < until) {
      const now = await expiredSessions(zk)
      expired = Math.max(0, ...now.map((n, i) => (n ?? 0) - (before[i] ?? n ?? 0)))
      if (expired > 0) break
      await sleep(100)
    }
    proc.kill('SIGCONT')
    return `process ${index} stopped (SIGSTOP) for ${Date.now() - stoppedAt} ms, past its hold sessions' timeout (${sessionMs} ms): ` +
      (expired > 0 ? `the server expired ${expired} session(s) meanwhile` : 'yet the server expired no session (not healed as meant)')
  }
}

export async function startZookeeperStore(): Promise<ChaosStore> {
  const zk = await startZookeeper()
  const server = zk.servers[0]!
  return { kind: 'zookeeper', url: `zk://${zk.hosts}/chaos`, proxyPorts: [server.port], close: () => zk.stop(),
    faults: {
      'store-restart': async () => { await server.restart(); return 'zookeeper killed (-9) and started again' },
      'session-expiry': sessionExpiry(zk),
    } }
}

export async function startZookeeperEnsembleStore(): Promise<ChaosStore> {
  const zk = await startZookeeperEnsemble(3)
  const leader = async () => {
    for (const s of zk.servers) if ((await zk.mode(s)) === 'leader') return s
    return undefined
  }
  const waitFor = async (what: string, check: () => Promise<boolean>) => {
    const started = Date.now()
    while (!(await check())) {
      if (Date.now() - started > ms(60_000)) throw new Error(`${what}: not within ${ms(60_000)} ms`)
      await sleep(100)
    }
    return Date.now() - started
  }
  return { kind: 'zookeeper-ensemble', url: `zk://${zk.hosts}/chaos`, proxyPorts: zk.servers.map((s) => s.port), close: () => zk.stop(),
    faults: {
      'session-expiry': sessionExpiry(zk),
      // kill -9 of the leader: the other two elect one of them; sessions move
      // with their clients. Healed once the old leader, started again on its
      // data directory, serves as a follower.
      'leader-kill': async () => {
        const old = await leader()
        if (!old) return 'no server leads now: nothing done'
        await old.kill()
        const electedIn = await waitFor('a new leader', async () => (await leader()) !== undefined)
        const next = await leader()
        await old.restart()
        const rejoinedIn = await waitFor(`server ${old.id} following`, async () => (await zk.mode(old)) === 'follower')
        return `leader ${old.id} (:${old.port}) killed (-9); server ${next?.id} leads after ${electedIn} ms; the old leader started again, following after ${rejoinedIn} ms more`
      },
      'majority-loss': majorityLoss({ members: zk.servers, label: (s) => `server ${s.id} (:${s.port})`,
        serving: async (s) => ['leader', 'follower'].includes((await zk.mode(s)) ?? '') }),
    } }
}

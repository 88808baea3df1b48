/**
 * A majority of a three-member store lost for a few seconds (etcd-cluster,
 * zookeeper-ensemble): two members (seeded) stopped (SIGSTOP: they keep their
 * sockets, answer nothing) or killed (-9), then resumed or started again on
 * their data directories. Meanwhile nothing can be granted, renewed or
 * released; the holders must see their holds as lost by their deadlines and
 * nothing may be granted twice once the majority is back.
 */
import type { ServerProcess } from '../../harness/servers.js'
import { ms } from '../../harness/timing.js'
import type { StoreFault } from '../store.js'

const sleep = (delay: number) => new Promise((resolve) => setTimeout(resolve, delay))

export interface Majority<M extends ServerProcess> {
  readonly members: readonly M[]
  /** A member's name in the fault's record. */
  readonly label: (member: M) => string
  /** Whether a member serves again (as part of a majority). */
  readonly serving: (member: M) => Promise<boolean>
}

export function majorityLoss<M extends ServerProcess>(store: Majority<M>): StoreFault {
  return async (random, _names, run) => {
    const spared = random.pick(store.members)
    const victims = store.members.filter((m) => m !== spared)
    const how = random.next() < 0.5 ? 'stopped (SIGSTOP)' : 'killed (-9)'
    // Past a hold's ttl, so the holders' deadlines pass while nothing answers.
    const downMs = random.int(run.ttlMs, run.ttlMs * 3)
    if (how === 'killed (-9)') {
      await Promise.all(victims.map((m) => m.kill()))
      await sleep(downMs)
      // Started together: neither is ready (a majority serving) before both are up.
      await Promise.all(victims.map((m) => m.restart()))
    } else {
      for (const m of victims) m.pause()
      await sleep(downMs)
      for (const m of victims) m.resume()
    }
    const started = Date.now()
    const serving = async () => (await Promise.all(store.members.map((m) => store.serving(m).catch(() => false)))).every(Boolean)
    while (!(await serving())) {
      if (Date.now() - started > ms(60_000)) throw new Error(`majority-loss: members not serving again within ${ms(60_000)} ms`)
      await sleep(100)
    }
    return `${victims.map(store.label).join(' and ')} ${how}, down ${downMs} ms (no majority), then back; ` +
      `every member serving again after ${Date.now() - started} ms more`
  }
}

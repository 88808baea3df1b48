/**
 * What a ZooKeeper client keeps for its watches: nothing per election name
 * once nobody observes it (a lock server's read token could otherwise grow
 * its heap with every name it asks about), and one listener per watched
 * path, however many of its waiters stand behind the same node (Node warned
 * MaxListenersExceededWarning under weighted contention).
 */
import assert from 'node:assert/strict'
import { after, before, it } from 'node:test'
import { connect, type Baton } from '../../src/index.js'
import { withTimeout } from '../conformance/context.js'
import { ms } from '../harness/timing.js'
import { startZookeeper, type ZkEnsemble } from '../harness/zookeeper.js'

let zk: ZkEnsemble
const warnings: Error[] = []
const onWarning = (warning: Error) => warnings.push(warning)
before(async () => {
  zk = await startZookeeper()
  process.on('warning', onWarning)
})
after(async () => {
  process.off('warning', onWarning)
  await zk.stop()
})

/** Watched paths the client's sessions keep on this side, all sessions together. */
async function watchedPaths(baton: Baton): Promise<number> {
  const sessions = (baton.driver as unknown as { sessions: { byLength: Map<number, Promise<{ watchedPaths(): number }>> } }).sessions.byLength
  let sum = 0
  for (const pending of sessions.values()) sum += (await pending).watchedPaths()
  return sum
}

it('observe() keeps nothing per name once its observers are gone', async () => {
  const baton = await connect(`zk://${zk.hosts}/watches`)
  try {
    const leader = await baton.election('watches/led', { ttl: '10s' }).campaign({ value: 'x' })
    // The leader's own watch on its node (set just after the grant, not waited for) is the hold's, not an observer's.
    for (let i = 0; i < 200 && (await watchedPaths(baton)) < 1; i++) await new Promise((r) => setTimeout(r, 10))
    const before = await watchedPaths(baton)
    for (let i = 0; i < 50; i++) {
      const stop = new AbortController()
      // Names with a leader (a watch on its node too) and names nobody uses (a watch for the node's creation).
      const name = i % 2 === 0 ? 'watches/led' : `watches/idle-${i}`
      const changes = baton.election(name).observe({ signal: stop.signal })[Symbol.asyncIterator]()
      await withTimeout(changes.next(), ms(10_000), 'the first leader read')
      stop.abort()
    }
    assert.equal((baton.driver as unknown as { elections: { observed: Map<string, unknown> } }).elections.observed.size, 0, 'no observed name is kept')
    assert.ok(await watchedPaths(baton) <= before, `watched paths kept: ${before} before, ${await watchedPaths(baton)} after 50 closed observers`)
    await leader.resign()
  } finally {
    await baton.close()
  }
})

it('many waiters of one client behind one holder: one listener per watched path (no MaxListenersExceededWarning)', async () => {
  const baton = await connect(`zk://${zk.hosts}/watches`)
  try {
    const name = 'watches/weighted'
    const semaphore = baton.semaphore(name, { permits: 20, ttl: '20s' })
    const heavy = await semaphore.acquire({ weight: 20 })
    const waiters = Array.from({ length: 15 }, () => semaphore.acquire({ weight: 1, wait: ms(20_000) }))
    for (let i = 0; i < 400 && ((await baton.inspect(name))?.waiters.length ?? 0) < 15; i++) await new Promise((r) => setTimeout(r, 25))
    assert.equal((await baton.inspect(name))?.waiters.length, 15)
    await heavy.release()
    for (const lease of await Promise.all(waiters)) await lease.release()
    await new Promise((r) => setImmediate(r))
    assert.deepEqual(warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map((w) => w.message), [])
  } finally {
    await baton.close()
  }
})

/**
 * Two servers on one store: a lease granted by `granting` and released (or
 * forced) through `other` is reported on the granting server's event stream
 * as a release (or a loss) when it happens, not as an expiry at the end of
 * its 60 s ttl (the stream is read for 20 s at most).
 */
import assert from 'node:assert/strict'
import { call, lockPath, readEvents } from './client.js'

export async function releasedThroughOther(granting: string, other: string, how: 'release' | 'force'): Promise<void> {
  const name = `elsewhere-${how}/${Date.now()}-${Math.random().toString(36).slice(2)}`
  let opened!: () => void
  const open = new Promise<void>((resolve) => (opened = resolve))
  const ended = readEvents(granting, `?prefix=${encodeURIComponent(name)}&types=release,expire,lost`, {}, opened, 1)
  await open
  const lease = await call(granting, 'POST', lockPath(name, '/acquire'), { ttl: '60s' })
  assert.equal(lease.status, 200)
  if (how === 'release') {
    assert.deepEqual((await call(other, 'DELETE', `/v1/leases/${lease.body.leaseId}`)).body, { released: true })
  } else {
    assert.deepEqual((await call(other, 'DELETE', lockPath(name))).body, { released: true })
  }
  const [event] = await ended
  assert.ok(event, 'the granting server reported the end of the lease while it had most of its ttl left')
  assert.equal(event.event, how === 'release' ? 'release' : 'lost')
  assert.equal(event.data.name, name)
  assert.equal(event.data.owner, lease.body.owner)
  assert.equal(event.data.token, lease.body.token)
  // Off the granting server's desk: its lease id is gone there too, and a new grant works at once.
  assert.equal((await call(granting, 'POST', `/v1/leases/${lease.body.leaseId}/extend`)).status, 410)
  const again = await call(granting, 'POST', lockPath(name, '/acquire'), { ttl: '5s' })
  assert.equal(again.status, 200)
  await call(granting, 'DELETE', `/v1/leases/${again.body.leaseId}`)
}

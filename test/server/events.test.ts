/**
 * Event streams: a reader that stops reading is not buffered for without
 * bound (its stream ends with an "overflow" event), and a reconnect with
 * Last-Event-ID gets what it missed from the server's ring, or a "gap" event
 * when the ring no longer has it.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { LockServer } from '../../src/server/index.js'
import { call, lockPath } from './client.js'
import { openEvents, parseSse, readUntil, startInProcess } from './in-process.js'

const BUFFER = 16 * 1024
const RING = 300
let server: LockServer
let base: string

before(async () => {
  ;({ server, base } = await startInProcess({ eventBufferBytes: BUFFER, eventRing: RING }))
})
after(() => server.close())

/** `pairs` acquires and releases of long names: two events each. */
async function churn(pairs: number, tag: string): Promise<void> {
  const long = 'x'.repeat(230)
  for (let i = 0; i < pairs; i += 50) {
    await Promise.all(Array.from({ length: Math.min(50, pairs - i) }, async (_, j) => {
      const lease = await call(base, 'POST', lockPath(`events/${tag}/${long}/${i + j}`, '/acquire'), {})
      assert.equal(lease.status, 200)
      await call(base, 'DELETE', `/v1/leases/${lease.body.leaseId}`)
    }))
  }
}

async function metric(name: string): Promise<number> {
  const text = (await call(base, 'GET', '/metrics')).body as string
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
  return line ? Number(line.split(' ').pop()) : 0
}

describe('event streams', () => {
  it('a reader that stops reading: the server buffers at most its cap, then ends the stream saying so', async () => {
    const stalled = await openEvents(base)
    const opening = await readUntil(stalled, (text) => text.includes('id: '))
    assert.match(opening, /^: baton events/)
    // The reader now reads nothing. Events go on until the server gives up on it.
    let most = 0
    let rounds = 0
    for (; rounds < 200 && (await metric('baton_event_streams_dropped_total')) === 0; rounds++) {
      await churn(100, 'stalled')
      most = Math.max(most, await metric('baton_event_stream_buffered_bytes'))
      assert.ok(most <= BUFFER + 4096, `the server buffered ${most} bytes for one stream (cap ${BUFFER})`)
    }
    assert.equal(await metric('baton_event_streams_dropped_total'), 1, 'the stalled stream was ended')
    console.log(`dropped after ${rounds} rounds`)
    // The reader comes back: everything before the cut, then the last event, then the end.
    const rest = await readUntil(stalled, () => false)
    const events = parseSse(opening + rest)
    const last = events[events.length - 1]!
    assert.equal(last.event, 'overflow')
    assert.match(last.data.reason, /Last-Event-ID/)
    assert.ok(events.length > 2)
    // Resuming from its last event: the ring (300 events) no longer has what followed, and the stream says so.
    const lastId = events.filter((e) => e.id).pop()!.id!
    await churn(RING, 'after')
    const resumed = await openEvents(base, { 'last-event-id': lastId })
    const text = await readUntil(resumed, (t) => t.includes('event: gap'))
    resumed.destroy()
    const gap = parseSse(text).find((e) => e.event === 'gap')!
    assert.match(gap.data.reason, /missed/)
  })

  it('Last-Event-ID: a reconnect gets exactly the events it missed, in order', async () => {
    const first = await openEvents(base, {}, '?prefix=resume/')
    const names = (tag: string) => Array.from({ length: 5 }, (_, i) => `resume/${tag}${i}`)
    const cycle = async (tag: string) => {
      for (const name of names(tag)) {
        const lease = await call(base, 'POST', lockPath(name, '/acquire'), {})
        await call(base, 'DELETE', `/v1/leases/${lease.body.leaseId}`)
      }
    }
    await cycle('a')
    const seen = parseSse(await readUntil(first, (t) => parseSse(t).length >= 10))
    first.destroy()
    assert.deepEqual(seen.map((e) => e.event), Array(5).fill(['grant', 'release']).flat())
    await cycle('b') // while disconnected
    await churn(10, 'other') // other names, filtered out by the prefix
    const again = await openEvents(base, { 'last-event-id': seen[9]!.id! }, '?prefix=resume/')
    const missed = parseSse(await readUntil(again, (t) => parseSse(t).length >= 10 || t.includes('event: gap')))
    again.destroy()
    assert.deepEqual(missed.map((e) => `${e.event} ${e.data.name}`), names('b').flatMap((n) => [`grant ${n}`, `release ${n}`]))
    const ids = missed.map((e) => Number(e.id!.split('-')[1]))
    assert.deepEqual(ids, [...ids].sort((a, b) => a - b))
    assert.equal(missed[0]!.id!.split('-')[0], seen[0]!.id!.split('-')[0], 'the same server run')
    // An id of another server run: told that events may have been missed.
    const foreign = await openEvents(base, { 'last-event-id': '00000000-5' })
    const told = parseSse(await readUntil(foreign, (t) => t.includes('event: gap')))
    foreign.destroy()
    assert.match(told[0]!.data.reason, /not from this server run/)
  })
})

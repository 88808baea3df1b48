/** The chaos checker on hand-made histories (no store): what it finds, once, and what a known exception excuses. */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { check } from '../../src/chaos/checker.js'
import { renderExceptions } from '../../src/chaos/exceptions.js'
import type { History, HistoryEvent, HoldMode } from '../../src/chaos/history.js'

const actor = (p: number) => ({ process: p, client: 0 })
function hold(lease: string, name: string, token: number, at: number, deadline: number, end?: number, mode: HoldMode = 'exclusive', weight = 1, permits = 1): HistoryEvent[] {
  const p = Number(lease.slice(1))
  const events: HistoryEvent[] = [
    { type: 'invoke', ...actor(p), op: `${lease}-op`, kind: 'acquire', primitive: 'mutex', names: [name], at: at - 1 },
    { type: 'complete', ...actor(p), op: `${lease}-op`, at, outcome: 'ok' },
    { type: 'grant', ...actor(p), op: `${lease}-op`, lease, primitive: mode === 'permit' ? 'semaphore' : 'mutex', name, mode, token: String(token), weight, permits, at, deadline },
  ]
  if (end !== undefined) events.push({ type: 'end', ...actor(p), lease, at: end, why: 'release' })
  return events
}
const history = (events: HistoryEvent[], store = 'redis'): History => ({ seed: 1, store, events: events.sort((a, b) => a.at - b.at), ttlMs: 1000, startedAt: 0, endedAt: 10_000 })

test('handed over in order: nothing to report', () => {
  const v = check(history([...hold('l1', 'a', 1, 10, 1010, 100), ...hold('l2', 'a', 2, 101, 1101, 200)]))
  assert.deepEqual([v.violations, v.excused], [[], []])
  assert.equal(v.holdsChecked, 2)
})

test('a forced release racing an acquire ends the hold it may have dropped, though its holder heard of the grant after', () => {
  const force = (at: number, done: number): HistoryEvent[] => [
    { type: 'invoke', ...actor(9), op: 'force', kind: 'forceRelease', primitive: 'mutex', names: ['a'], at },
    { type: 'complete', ...actor(9), op: 'force', at: done, outcome: 'ok', answer: true } as HistoryEvent,
  ]
  // l1 asked at 99, the forced release ran 100-200, l1 heard of its grant at 210; l2 granted at 250.
  const racing = [...hold('l1', 'a', 1, 210, 2000).map((e) => (e.type === 'invoke' ? { ...e, at: 99 } : e)), ...force(100, 200), ...hold('l2', 'a', 2, 250, 2000)]
  assert.deepEqual(check(history(racing)).violations, [])
  // Asked for after the forced release was answered: it could not have dropped it.
  const after = [...force(100, 200), ...hold('l1', 'a', 1, 210, 2000), ...hold('l2', 'a', 2, 250, 2000)]
  assert.deepEqual(check(history(after)).violations.map((f) => f.property), ['two-holders'])
})

test('two holders: each offending hold once, even when many overlap one', () => {
  const events = hold('l1', 'a', 1, 10, 5000)
  for (let i = 2; i < 50; i++) events.push(...hold(`l${i}`, 'a', i, 10 + i * 20, 10 + i * 20 + 5, 10 + i * 20 + 5))
  const v = check(history(events))
  assert.equal(v.violations.length, 48)
  assert.ok(v.violations.every((f) => f.property === 'two-holders'))
})

test('a release invoked ends the hold; a loss seen ends it; a forced release ends it when invoked', () => {
  const events: HistoryEvent[] = [
    ...hold('l1', 'a', 1, 10, 1010), { type: 'loss', ...actor(1), lease: 'l1', at: 50 },
    ...hold('l2', 'a', 2, 60, 1060),
    { type: 'invoke', ...actor(9), op: 'f', kind: 'forceRelease', primitive: 'mutex', names: ['a'], at: 100 },
    { type: 'complete', ...actor(9), op: 'f', at: 105, outcome: 'ok' },
    ...hold('l3', 'a', 3, 106, 1106, 200),
  ]
  assert.deepEqual(check(history(events)).violations, [])
})

test('weights past the permits, a reader beside a writer', () => {
  const v = check(history([
    ...hold('l1', 's', 1, 10, 1010, 500, 'permit', 2, 3), ...hold('l2', 's', 2, 20, 1020, 500, 'permit', 2, 3),
    ...hold('l3', 'r', 1, 10, 1010, 500, 'write'), ...hold('l4', 'r', 2, 20, 1020, 500, 'read'),
  ]))
  assert.deepEqual(v.violations.map((f) => f.property).sort(), ['over-permits', 'reader-beside-writer'])
})

test('a token not above one granted before it was asked for', () => {
  const v = check(history([...hold('l1', 'a', 5, 10, 1010, 100), ...hold('l2', 'a', 4, 200, 1200, 300)]))
  assert.deepEqual(v.violations.map((f) => f.property), ['token-order'])
})

test('a lease that still says held with no time left', () => {
  const v = check(history([...hold('l1', 'a', 1, 10, 1010),
    { type: 'probe', ...actor(1), lease: 'l1', at: 2000, held: true, aborted: false, remainingMs: 0, stillHeld: true, stillNotAborted: true, recheckedAfterMs: 3 },
    { type: 'probe', ...actor(1), lease: 'l1', at: 2010, held: true, aborted: false, remainingMs: 0, stillHeld: true, stillNotAborted: true, recheckedAfterMs: 3 }]))
  assert.deepEqual(v.violations.map((f) => f.property), ['looks-held-after-deadline'])
})

test('an extend that resolved with no time left: a violation, and no time added to the hold', () => {
  // l1's extend was read after a pause (deadline = at: remainingMs() 0) while l2 held the name.
  const v = check(history([...hold('l1', 'a', 1, 10, 1010, 3000), ...hold('l2', 'a', 2, 1500, 2500, 2600),
    { type: 'renew', ...actor(1), lease: 'l1', at: 2700, deadline: 2700 }]))
  assert.deepEqual(v.violations.map((f) => f.property), ['renewed-after-lapse'])
  assert.match(v.violations[0]!.evidence, /extend\(\) resolved at .* as renewed, with remainingMs\(\) 0/)
})

test('a known exception excuses a violation near its fault, and says so; none on a store it does not cover', () => {
  const events = [...hold('l1', 'a', 1, 10, 3000), ...hold('l2', 'a', 2, 1500, 2500, 2600),
    { type: 'fault', kind: 'store-restart', target: 'redis', at: 1400, healedAt: 1450 } as HistoryEvent]
  const redis = check(history([...events]))
  assert.deepEqual([redis.violations.length, redis.excused.length], [0, 1])
  assert.match(redis.excused[0]!.excusedBy!.why, /restarts empty/)
  const postgres = check(history([...events], 'postgres'))
  assert.deepEqual([postgres.violations.length, postgres.excused.length], [1, 0])
})

test('two leaders in one term, an observer going back', () => {
  const o = (at: number, stream: string, token: number, holder?: string): HistoryEvent =>
    ({ type: 'observation', ...actor(1), via: holder ? 'leader' : 'observe', stream, name: 'e', at, token: String(token), ...(holder ? { holder } : {}) })
  const v = check(history([o(10, '', 3, 'x'), o(20, '', 3, 'y'), o(30, 's1', 4), o(40, 's1', 2)]))
  assert.deepEqual(v.violations.map((f) => f.property).sort(), ['observer-order', 'two-leaders'])
})

test('on the lock server, one term seen under the holder\'s owner by its own process and under a digest by another is one leader', () => {
  const o = (p: number, at: number, holder: string): HistoryEvent =>
    ({ type: 'observation', ...actor(p), via: 'leader', stream: '', name: 'e', at, token: '3', holder })
  const shown = [o(1, 10, 'owner-id.1'), o(2, 20, 'digestOfOwner')]
  assert.deepEqual(check(history(shown, 'http-memory')).violations, [])
  // One observer seeing two holders of one term is still two leaders; and on a store that names owners alike everywhere, any two.
  assert.deepEqual(check(history([...shown, o(2, 30, 'anotherDigest')], 'http-memory')).violations.map((f) => f.property), ['two-leaders'])
  assert.deepEqual(check(history(shown, 'redis')).violations.map((f) => f.property), ['two-leaders'])
})

test('on etcd, one term seen by its candidate\'s client under its owner and by another under its key is one leader', () => {
  const o = (p: number, at: number, holder: string): HistoryEvent =>
    ({ type: 'observation', ...actor(p), via: 'leader', stream: '', name: 'e', at, token: '2981', holder })
  // etcd-cluster seed 2904: p19c1 led and read itself; p18c1 read the same key (the value is bare).
  const own = o(19, 10, 'TqIWgVeR.wAog1i')
  const byKey = o(18, 20, 'etcd-lease:24cea21e5ab81e46.wAog1i')
  assert.deepEqual(check(history([own, byKey], 'etcd-cluster')).violations, [])
  // Another hold's key, two keys, or two owners in one term are still two leaders.
  for (const two of [[own, o(18, 20, 'etcd-lease:24cea21e5ab81e46.wAog1k')], [byKey, o(17, 30, 'etcd-lease:24cea21e5ab81e47.wAog1i')], [own, o(17, 30, 'jZDk_wgF.wAog1k')]]) {
    assert.deepEqual(check(history(two, 'etcd-cluster')).violations.map((f) => f.property), ['two-leaders'])
  }
})

test('an observe stream that skips a long term is reported; one that skips a short term is not', () => {
  const o = (at: number, token: number | null): HistoryEvent =>
    ({ type: 'observation', ...actor(1), via: 'observe', stream: 's1', name: 'e', at, token: token === null ? null : String(token) })
  const term = (lease: string, token: number, at: number, end: number): HistoryEvent[] => [
    { type: 'grant', ...actor(2), op: `${lease}-op`, lease, primitive: 'election', name: 'e', mode: 'exclusive', token: String(token), weight: 1, permits: 1, at, deadline: end + 500 },
    { type: 'end', ...actor(2), lease, at: end, why: 'resign' },
  ]
  // ttl 1000 in these histories: a term is long past 2 ttl + 5 s.
  const long = check(history([o(10, 1), ...term('l2', 2, 100, 8000), o(9000, 3)]))
  assert.deepEqual(long.violations.map((f) => f.property), ['observer-skipped-term'])
  assert.match(long.violations[0]!.evidence, /without showing term 2/)
  const short = check(history([o(10, 1), ...term('l2', 2, 100, 300), o(400, null)]))
  assert.deepEqual(short.violations, [])
})

test('a starved waiter is a warning, a violation only when asked', () => {
  const events: HistoryEvent[] = [{ type: 'invoke', ...actor(1), op: 'w', kind: 'acquire', primitive: 'mutex', names: ['a'], at: 10 }]
  assert.deepEqual(check(history([...events])).warnings.map((f) => f.property), ['waiter-starved'])
  assert.deepEqual(check(history([...events]), { strictProgress: true }).violations.map((f) => f.property), ['waiter-starved'])
})

test('a holder that sees a forced release late while its process runs is a warning (loss-unnoticed); a timely, stopped or silent one is not', () => {
  // ttl 1000 in these histories: the bound is 2 s. The runner (process -1) forces "a" while p1 holds it.
  const forced = (answer: boolean): HistoryEvent[] => [
    { type: 'invoke', ...actor(-1), op: 'runner-f1', kind: 'forceRelease', primitive: 'mutex', names: ['a'], at: 100 },
    { type: 'complete', ...actor(-1), op: 'runner-f1', at: 105, outcome: 'ok', answer },
  ]
  const running: HistoryEvent = { type: 'probe', ...actor(1), lease: 'l1', at: 3000, held: true, aborted: false, remainingMs: 3000 }
  const lostAt = (at: number): HistoryEvent => ({ type: 'loss', ...actor(1), lease: 'l1', at, code: 'LOCK_LOST' })
  const late = [...hold('l1', 'a', 1, 10, 6010), ...forced(true), running, lostAt(6000)]
  const warned = check(history([...late]))
  assert.deepEqual([warned.violations, warned.warnings.map((f) => f.property)], [[], ['loss-unnoticed']])
  assert.match(warned.warnings[0]!.evidence, /forced release runner-f1 .* answered true at \+0\.105 s; l1 .* 5895 ms to notice \(bound 2000 ms\)/)
  assert.deepEqual(check(history([...late]), { strictProgress: true }).violations.map((f) => f.property), ['loss-unnoticed'])
  const stall: HistoryEvent = { type: 'fault', kind: 'client-stall', target: 'process 1', at: 90, healedAt: 2500 }
  for (const clean of [
    [...hold('l1', 'a', 1, 10, 6010), ...forced(true), lostAt(150), running],
    [...hold('l1', 'a', 1, 10, 6010), ...forced(false), running, lostAt(6000)],
    [...late, stall],
    [...hold('l1', 'a', 1, 10, 6010), ...forced(true), lostAt(6000)],
  ]) assert.deepEqual(check(history(clean)).warnings, [])
})

test('a waiter behind holds that cover the name, or behind an earlier waiter, is not starved', () => {
  const wait = (op: string, p: number, at: number, done?: number): HistoryEvent[] => [
    { type: 'invoke', ...actor(p), op, kind: 'acquire', primitive: 'mutex', names: ['a'], at },
    ...(done === undefined ? [] : [{ type: 'complete', ...actor(p), op, at: done, outcome: 'ok' } as HistoryEvent]),
  ]
  // Held 0–9,500 ms in turns while "w" waits 100–9,600 ms: never free for the bound (8 s).
  const covered = [...hold('h1', 'a', 1, 0, 6000, 4000), ...hold('h2', 'a', 2, 4000, 12_000, 9500), ...wait('w', 2, 100, 9600)]
  assert.deepEqual(check(history(covered)).warnings, [])
  // "late" asked after "early", which waited until 9,000 ms: "late" was not first in line before then.
  const behind = [...wait('early', 1, 50, 9000), ...wait('late', 2, 100, 9900)]
  assert.deepEqual(check(history(behind)).warnings.map((f) => f.involved), [['early']])
})

test('a wait of a killed process ends at the kill: not starved by the run\'s end, nor hiding a later waiter', () => {
  const wait = (op: string, p: number, at: number): HistoryEvent => ({ type: 'invoke', ...actor(p), op, kind: 'acquire', primitive: 'mutex', names: ['a'], at })
  const kill = (p: number, at: number): HistoryEvent => ({ type: 'fault', kind: 'client-kill', target: `process ${p}`, at, healedAt: at + 5 })
  // p1 killed 200 ms into its wait: never answered, yet not a waiter past then (etcd-cluster seed 2904 warned of six such, each in a process killed while it waited).
  assert.deepEqual(check(history([wait('dead', 1, 100), kill(1, 300)])).warnings, [])
  // A stall (SIGSTOP) is no kill: its wait is still out.
  const stall: HistoryEvent = { type: 'fault', kind: 'client-stall', target: 'process 1', at: 300, healedAt: 2000 }
  assert.deepEqual(check(history([wait('stalled', 1, 100), stall])).warnings.map((f) => f.involved), [['stalled']])
  // Behind the killed waiter, p2 waits from 400 ms on, unanswered while the name is free: starved.
  assert.deepEqual(check(history([wait('dead', 1, 100), kill(1, 300), wait('late', 2, 400)])).warnings.map((f) => f.involved), [['late']])
  // A wait asked after its process number was killed (the process started anew) is not ended by that kill.
  assert.deepEqual(check(history([kill(1, 50), wait('anew', 1, 100)])).warnings.map((f) => f.involved), [['anew']])
})

test('a token below one granted before a wiping restart is excused however long after the restart it is granted; without the restart between them it is not', () => {
  // As http-memory seed 2906 showed: a wipe healed at +94.5 s, the name's next grant (token 11, below 71 from before) came at +99.1 s, past the window.
  const wipe: HistoryEvent = { type: 'fault', kind: 'store-restart-wiped', target: 'http-memory', at: 1000, healedAt: 1100 }
  const late = [...hold('l1', 'a', 71, 500, 900, 800), wipe, ...hold('l2', 'a', 11, 6000, 7000, 6500)]
  const v = check(history(late, 'http-memory'))
  assert.deepEqual([v.violations, v.excused.map((f) => f.property)], [[], ['token-order']])
  // The same break with the restart before both grants: nothing between them explains it.
  const before = [wipe, ...hold('l1', 'a', 71, 5000, 5400, 5300), ...hold('l2', 'a', 11, 6000, 7000, 6500)]
  assert.deepEqual(check(history(before, 'http-memory')).violations.map((f) => f.property), ['token-order'])
})

test('ghost-grant: a hold of a client whose attempt failed, granted after the store was emptied or after a lower token was asked for', () => {
  const client = (p: number): HistoryEvent => ({ type: 'client', ...actor(p), clientId: `id${p}`, at: 0 })
  const call = (p: number, op: string, kind: 'tryAcquire' | 'inspect', at: number, end: number | undefined, outcome: 'ok' | 'error' = 'error'): HistoryEvent[] => [
    { type: 'invoke', ...actor(p), op, kind, primitive: 'mutex', names: ['a'], at },
    ...(end === undefined ? [] : [{ type: 'complete', ...actor(p), op, at: end, outcome, ...(outcome === 'error' ? { code: 'BACKEND_UNAVAILABLE' } : {}) } as HistoryEvent]),
  ]
  const seen = (at: number, token: string): HistoryEvent[] => [...call(2, `seen${at}`, 'inspect', at - 5, at, 'ok'),
    { type: 'seen', ...actor(2), op: `seen${at}`, name: 'a', at, holders: [{ owner: 'id1.x7', token }] }]
  const restart: HistoryEvent = { type: 'fault', kind: 'store-restart', target: 'redis', at: 1000, healedAt: 3100, emptied: { at: 3000 } }
  // p1's attempt failed during the outage; the store came back empty; p1's hold shows up with nothing of p1's in flight.
  const ghost = check(history([client(1), client(2), ...call(1, 'f', 'tryAcquire', 900, 2100), restart, ...seen(3200, '77')]))
  assert.deepEqual(ghost.violations.map((f) => f.property), ['ghost-grant'])
  assert.match(ghost.violations[0]!.evidence, /hold of p1c0 .*token 77.*emptied at.*tryAcquire f had failed/)
  // The attempt was still out when the store came back: its hold may be undone later, as it should.
  assert.deepEqual(check(history([client(1), client(2), ...call(1, 'f', 'tryAcquire', 900, 3150), restart, ...seen(3200, '77')])).violations, [])
  // Another attempt of p1's on the name was out meanwhile (killed with its process: never answered).
  assert.deepEqual(check(history([client(1), client(2), ...call(1, 'f', 'tryAcquire', 900, 2100), restart, ...call(1, 'g', 'tryAcquire', 3050, undefined), ...seen(3200, '77')])).violations, [])
  // A multi-lock attempt answered busy may have held the name meanwhile (and given it back).
  const multi: HistoryEvent[] = [{ type: 'invoke', ...actor(1), op: 'm', kind: 'tryAcquire', primitive: 'multi', names: ['a', 'b'], at: 2900 },
    { type: 'complete', ...actor(1), op: 'm', at: 3300, outcome: 'busy' }]
  assert.deepEqual(check(history([client(1), client(2), ...call(1, 'f', 'tryAcquire', 900, 2100), restart, ...multi, ...seen(3200, '77')])).violations, [])
  const multiOk: HistoryEvent[] = [{ ...multi[0]!, op: 'm2' } as HistoryEvent, { type: 'complete', ...actor(1), op: 'm2', at: 3300, outcome: 'ok' },
    { type: 'grant', ...actor(1), op: 'm2', lease: 'l9', primitive: 'multi', name: 'a', mode: 'exclusive', token: '90', owner: 'id1.y1', weight: 1, permits: 1, at: 3300, deadline: 4300 }]
  assert.deepEqual(check(history([client(1), client(2), ...call(1, 'f', 'tryAcquire', 900, 2100), restart, ...multiOk, ...seen(3200, '77')])).violations, [])
  // A single-name attempt answered busy after the read: a grant of it that came too late to use may have been
  // shown while it was given back (fresh-clone run G2, Redis restarted under a tryAcquire). Answered busy
  // before the read was asked, it had nothing left in the store.
  const busyLate: HistoryEvent[] = [...call(1, 'b', 'tryAcquire', 2900, 3300, 'ok').map((e) => (e.type === 'complete' ? { ...e, outcome: 'busy' } as HistoryEvent : e))]
  assert.deepEqual(check(history([client(1), client(2), ...call(1, 'f', 'tryAcquire', 900, 2100), restart, ...busyLate, ...seen(3200, '77')])).violations, [])
  const busyEarly: HistoryEvent[] = [...call(1, 'b', 'tryAcquire', 3050, 3100, 'ok').map((e) => (e.type === 'complete' ? { ...e, outcome: 'busy' } as HistoryEvent : e))]
  assert.deepEqual(check(history([client(1), client(2), ...call(1, 'f', 'tryAcquire', 900, 2100), restart, ...busyEarly, ...seen(3200, '77')])).violations.map((f) => f.property), ['ghost-grant'])
  // A single-name call answered with its grant explains only its own owner.
  const single: HistoryEvent[] = [...call(1, 's', 'tryAcquire', 3050, 3100, 'ok'),
    { type: 'grant', ...actor(1), op: 's', lease: 'l8', primitive: 'mutex', name: 'a', mode: 'exclusive', token: '60', owner: 'id1.y2', weight: 1, permits: 1, at: 3100, deadline: 3150 }]
  assert.deepEqual(check(history([client(1), client(2), ...call(1, 'f', 'tryAcquire', 900, 2100), restart, ...single, ...seen(3200, '77')])).violations.map((f) => f.property), ['ghost-grant'])
  // A grant the history has is no ghost.
  assert.deepEqual(check(history([client(1), client(2), ...call(1, 'f', 'tryAcquire', 900, 2100), restart, ...hold('l1', 'a', 77, 3150, 4000, 3300), ...seen(3200, '77')])).violations, [])
  // Without an emptied store: a lower token asked for after the failure orders the ghost after it; one asked before does not.
  const after = check(history([client(1), client(2), ...call(1, 'f', 'tryAcquire', 900, 2100), ...hold('l3', 'a', 50, 2300, 3000, 2400), ...seen(3200, '77')]))
  assert.deepEqual(after.violations.map((f) => f.property), ['ghost-grant'])
  assert.deepEqual(check(history([client(1), client(2), ...call(1, 'f', 'tryAcquire', 900, 2100), ...hold('l3', 'a', 50, 1000, 3000, 2400), ...seen(3200, '77')])).violations, [])
})

test('docs/faults.md shows the known exceptions table the checker uses', () => {
  const doc = readFileSync(fileURLToPath(new URL('../../../docs/faults.md', import.meta.url)), 'utf8')
  const shown = /<!-- chaos-exceptions -->\n([\s\S]*?)\n<!-- \/chaos-exceptions -->/.exec(doc)?.[1]
  assert.equal(shown, renderExceptions(), 'docs/faults.md: rewrite the chaos-exceptions block from renderExceptions() (src/chaos/exceptions.ts)')
})

test('a multi-lock part ends at its own deadline, not at another part\'s later one', () => {
  // As mysql seed 2902 showed: a set granted "a" until 1,000 ms and "b" until 2,000 ms, its process then killed.
  const set: HistoryEvent[] = [
    { type: 'invoke', ...actor(1), op: 'set-op', kind: 'acquire', primitive: 'multi', names: ['a', 'b'], at: 90 },
    { type: 'complete', ...actor(1), op: 'set-op', at: 100, outcome: 'ok' },
    { type: 'grant', ...actor(1), op: 'set-op', lease: 'set', primitive: 'multi', name: 'a', mode: 'exclusive', token: '5', weight: 1, permits: 1, at: 100, deadline: 1000 },
    { type: 'grant', ...actor(1), op: 'set-op', lease: 'set', primitive: 'multi', name: 'b', mode: 'exclusive', token: '6', weight: 1, permits: 1, at: 100, deadline: 2000 },
  ]
  assert.deepEqual(check(history([...set, ...hold('l2', 'a', 7, 1500, 3000)])).violations, [])
  assert.deepEqual(check(history([...set, ...hold('l2', 'b', 7, 1500, 3000)])).violations.map((f) => f.property), ['two-holders'])
})

/**
 * The checker: reads a history and reports what broke, each offending hold,
 * write or read once, with its evidence. Linear-ish: holds are swept per
 * name in grant order against the holds still open, not compared pairwise.
 *
 * No check depends on how fast the machine was: a hold's interval is what
 * its holder knew (a slow holder only shortens it), and the two checks that
 * are about time passing (a waiter not granted while the name was free, a
 * holder slow to see a forced release: notices.ts) are warnings unless the
 * caller makes them strict.
 */
import { exceptionFor, type KnownException, type Property } from './exceptions.js'
import type { History, HistoryEvent, Invoke } from './history.js'
import { ghostGrants } from './ghosts.js'
import { lossNoticeBoundMs, unnoticedLosses } from './notices.js'
import { intervalsOf, type Interval } from './intervals.js'

export interface Finding {
  readonly property: Property
  /** When it happened (ms of the history's clock). */
  readonly at: number
  readonly evidence: string
  /** The operations and leases involved. */
  readonly involved: readonly string[]
  /**
   * Where a finding spans two moments (a token below one granted at
   * `since`): a known exception's fault anywhere between them explains it,
   * e.g. a counter started again, whose next grant on the name may come
   * long after the fault healed.
   */
  readonly since?: number
  /** The known exception covering it, if any: then it is reported apart. */
  excusedBy?: KnownException
}

export interface Verdict {
  readonly violations: Finding[]
  readonly excused: Finding[]
  readonly warnings: Finding[]
  /** Holds whose intervals were checked. */
  readonly holdsChecked: number
}

export interface CheckOptions {
  /** A waiter the name was free for this long (ms) is reported; default 3 ttl + 5 s. */
  readonly starvationMs?: number
  /** A holder a forced release removed that saw its loss no sooner than this (ms) is reported; default lossNoticeBoundMs(ttl). */
  readonly lossNoticeMs?: number
  /** Report starved waiters and unnoticed losses as violations, not warnings (never in CI: load can cause them). */
  readonly strictProgress?: boolean
}

/**
 * Two clocks read in two processes of one machine, each on the safe side (a
 * grant stamped after the store granted it, an end before the release was
 * sent): a couple of milliseconds covers the rounding.
 */
const SLACK_MS = 2

/** Times in evidence are seconds since the run began. */
let t0 = 0
const t = (ms: number) => `+${((ms - t0) / 1000).toFixed(3)} s`

export function check(history: History, options: CheckOptions = {}): Verdict {
  t0 = history.startedAt
  const intervals = intervalsOf(history.events)
  const found: Finding[] = [
    ...overlaps(intervals),
    ...tokenOrder(history.events),
    ...staleWrites(history.events),
    ...lostUpdates(history.events),
    ...looksHeld(history.events),
    ...renewedAfterLapse(history.events),
    ...leaders(history.events, ownersShownPerClient(history.store)),
    ...skippedTerms(history.events, history.ttlMs * 2 + OBSERVE_RETRY_CAP_MS),
    ...leftovers(history.events),
    ...ghostGrants(history.events, t),
  ]
  // The checks about time passing: warnings unless the caller makes progress strict.
  const slow = [
    ...starvedWaiters(history, intervals, options.starvationMs ?? history.ttlMs * 3 + 5000),
    ...unnoticedLosses(history.events, options.lossNoticeMs ?? lossNoticeBoundMs(history.ttlMs), t),
  ]
  const faults = history.events.filter((e) => e.type === 'fault')
  const excuse = (f: Finding): Finding => {
    for (const fault of faults) {
      const exception = exceptionFor(history.store, fault.kind, f.property)
      if (!exception) continue
      const window = exception.leases * history.ttlMs
      if (f.at >= fault.at - window && (f.since ?? f.at) <= (fault.healedAt ?? history.endedAt) + window) return { ...f, excusedBy: exception }
    }
    return f
  }
  const judged = found.map(excuse)
  return {
    violations: [...judged.filter((f) => !f.excusedBy), ...(options.strictProgress ? slow : [])],
    excused: judged.filter((f) => f.excusedBy),
    warnings: options.strictProgress ? [] : slow,
    holdsChecked: new Set(intervals.map((i) => i.lease)).size,
  }
}

const who = (i: Interval) => `${i.lease} (${i.mode}${i.mode === 'permit' ? ` ×${i.weight}` : ''}, token ${i.token}, p${i.process}c${i.client})`

/** Two exclusive holders, a reader beside a writer, more weight than permits. */
function overlaps(intervals: readonly Interval[]): Finding[] {
  const byName = new Map<string, Interval[]>()
  for (const i of intervals) if (i.end > i.start) byName.set(i.name, [...(byName.get(i.name) ?? []), i])
  const found: Finding[] = []
  for (const [name, list] of byName) {
    let open: Interval[] = []
    for (const i of list) {
      open = open.filter((o) => o.end > i.start + SLACK_MS && o.lease !== i.lease)
      if (open.length === 0) { open.push(i); continue }
      const longest = open.reduce((a, b) => (b.end > a.end ? b : a))
      if (i.mode === 'permit') {
        const used = open.reduce((sum, o) => sum + o.weight, 0)
        if (used + i.weight > i.permits) {
          found.push({ property: 'over-permits', at: i.start, involved: [i.lease, ...open.map((o) => o.lease)],
            evidence: `"${name}": ${who(i)} granted at ${t(i.start)} while ${used} of ${i.permits} permits were held by ${open.map(who).join(', ')}` })
        }
      } else {
        const writer = i.mode === 'read' ? open.find((o) => o.mode === 'write' || o.mode === 'exclusive') : longest
        if (writer) {
          const property: Property = i.mode === 'read' || writer.mode === 'read' ? 'reader-beside-writer' : 'two-holders'
          found.push({ property, at: i.start, involved: [writer.lease, i.lease],
            evidence: `"${name}": ${who(i)} granted at ${t(i.start)} while ${who(writer)} held it (granted ${t(writer.start)}, until ${t(writer.end)} by ${writer.endedBy})` })
        }
      }
      open.push(i)
    }
  }
  return found
}

/**
 * A grant that began after another ended must carry a higher token (per
 * name). Where the order broke (a store that lost its counter), the grants
 * after it that stay below the same highest token are the same break:
 * counted in its evidence, not reported again.
 */
function tokenOrder(events: readonly HistoryEvent[]): Finding[] {
  const invokedAt = new Map<string, number>()
  for (const e of events) if (e.type === 'invoke') invokedAt.set(e.op, e.at)
  const grants = events.filter((e) => e.type === 'grant')
  const found: Finding[] = []
  const byName = new Map<string, typeof grants>()
  for (const g of grants) byName.set(g.name, [...(byName.get(g.name) ?? []), g])
  for (const [name, list] of byName) {
    const completed = [...list].sort((a, b) => a.at - b.at)
    const invoked = [...list].sort((a, b) => (invokedAt.get(a.op) ?? a.at) - (invokedAt.get(b.op) ?? b.at))
    let k = 0
    let highest: (typeof grants)[number] | undefined
    type Grant = (typeof grants)[number]
    const breaks: { against: Grant; first: Grant; start: number; followers: number }[] = []
    for (const g of invoked) {
      const start = invokedAt.get(g.op) ?? g.at
      while (k < completed.length && completed[k]!.at < start) {
        const c = completed[k++]!
        if (!highest || BigInt(c.token) > BigInt(highest.token)) highest = c
      }
      if (!highest || BigInt(g.token) > BigInt(highest.token) || highest.lease === g.lease) continue
      const last = breaks.at(-1)
      if (last?.against === highest) last.followers++
      else breaks.push({ against: highest, first: g, start, followers: 0 })
    }
    for (const { against: h, first: g, start, followers } of breaks) {
      found.push({ property: 'token-order', at: g.at, since: h.at, involved: [h.lease, g.lease],
        evidence: `"${name}": ${g.lease} got token ${g.token} (asked at ${t(start)}) after ${h.lease} had been granted token ${h.token} at ${t(h.at)}` +
          (followers > 0 ? `; the ${followers} grant(s) after it stayed below token ${h.token}` : '') })
    }
  }
  return found
}

/** The resource accepted a write whose token was below one it had accepted. */
function staleWrites(events: readonly HistoryEvent[]): Finding[] {
  return events.filter((e) => e.type === 'write' && e.accepted && e.highestBefore !== null && BigInt(e.token) < BigInt(e.highestBefore))
    .map((w) => w.type === 'write' ? {
      property: 'stale-write' as const, at: w.at, involved: [w.lease],
      evidence: `"${w.name}": the resource accepted ${w.lease}'s write with token ${w.token} at ${t(w.at)} after token ${w.highestBefore}`,
    } : undefined!)
}

/** A read-modify-write accepted although the resource had changed since the writer read it (a fence on the write alone lets this through). */
function lostUpdates(events: readonly HistoryEvent[]): Finding[] {
  return events.flatMap((w) => w.type === 'write' && w.accepted && w.readVersion !== undefined && w.readVersion !== w.versionAtWrite ? [{
    property: 'lost-update' as const, at: w.at, involved: [w.lease],
    evidence: `"${w.name}": ${w.lease} (token ${w.token}) wrote at ${t(w.at)} from version ${w.readVersion}, but the resource was at version ${w.versionAtWrite}`,
  }] : [])
}

/** A lease read as held (or its signal as not aborted) with no time left, twice, a few ms apart. */
function looksHeld(events: readonly HistoryEvent[]): Finding[] {
  const seen = new Set<string>()
  const what = new Map<string, string>()
  for (const e of events) if (e.type === 'grant') what.set(e.lease, `${e.primitive} ${e.mode} "${e.name}"${what.has(e.lease) ? ' …' : ''}`)
  const found: Finding[] = []
  for (const e of events) {
    if (e.type !== 'probe' || seen.has(e.lease) || e.recheckedAfterMs === undefined) continue
    if (!e.stillHeld && !e.stillNotAborted) continue
    seen.add(e.lease)
    found.push({ property: 'looks-held-after-deadline', at: e.at, involved: [e.lease],
      evidence: `${e.lease} (${what.get(e.lease) ?? '?'}, p${e.process}c${e.client}) read at ${t(e.at)}: remainingMs() 0, yet ${e.stillHeld ? 'held true' : ''}${e.stillHeld && e.stillNotAborted ? ' and ' : ''}${e.stillNotAborted ? 'signal not aborted' : ''} ${e.recheckedAfterMs.toFixed(1)} ms later` })
  }
  return found
}

/** An extend that resolved as renewed, the lease having no time left when it did (read after a pause longer than the lease). */
function renewedAfterLapse(events: readonly HistoryEvent[]): Finding[] {
  const seen = new Set<string>()
  const found: Finding[] = []
  for (const e of events) {
    if (e.type !== 'renew' || e.deadline > e.at || seen.has(e.lease)) continue
    seen.add(e.lease)
    found.push({ property: 'renewed-after-lapse', at: e.at, involved: [e.lease],
      evidence: `${e.lease} (p${e.process}c${e.client}): extend() resolved at ${t(e.at)} as renewed, with remainingMs() 0: an answer read after the lease lapsed` })
  }
  return found
}

/**
 * Whether a store shows one holder under different names to different
 * clients: the lock server names an owner in full only to the client that
 * holds (`http`, `http-memory`, `http-redis`), and as the server's digest
 * of it to everyone else. Two clients' views of one term then differ in
 * name, not in holder, and are compared per observing client.
 */
const ownersShownPerClient = (store: string): boolean => store === 'http' || store.startsWith('http-')

/**
 * etcd keeps an election candidate's value bare (etcd's own election
 * layout, docs/election.md), so only its own client names it by its owner
 * (`<client id>.<hold id>`); every other client by its key
 * (`etcd-lease:<lease hex>.<hold id>`). The two name one holder when the
 * parts after the first dot agree; two views of one form must be equal.
 */
function sameHolder(a: string, b: string): boolean {
  if (a === b) return true
  const byKey = (holder: string) => holder.startsWith('etcd-lease:')
  if (byKey(a) === byKey(b)) return false
  const tail = (holder: string) => holder.slice(holder.indexOf('.') + 1)
  return a.includes('.') && b.includes('.') && tail(a) === tail(b)
}

/** Two leaders in one term (as one observer saw it, where holders' names differ by observer); an observe stream going back. */
function leaders(events: readonly HistoryEvent[], perClient: boolean): Finding[] {
  const found: Finding[] = []
  const holderOfTerm = new Map<string, { holder: string; at: number }>()
  const lastOfStream = new Map<string, bigint>()
  const reported = new Set<string>()
  for (const e of events) {
    if (e.type !== 'observation' || e.token === null) continue
    const term = `${e.name}#${e.token}${perClient ? `@p${e.process}c${e.client}` : ''}`
    const known = holderOfTerm.get(term)
    if (e.holder !== undefined) {
      if (known && !sameHolder(known.holder, e.holder) && !reported.has(term)) {
        reported.add(term)
        found.push({ property: 'two-leaders', at: e.at, involved: [known.holder, e.holder],
          evidence: `"${e.name}": term ${e.token} led by ${known.holder} (seen at ${t(known.at)}) and by ${e.holder} (seen at ${t(e.at)})` })
      } else if (!known) holderOfTerm.set(term, { holder: e.holder, at: e.at })
    }
    if (e.via === 'observe') {
      const token = BigInt(e.token)
      const last = lastOfStream.get(e.stream)
      if (last !== undefined && token < last) {
        found.push({ property: 'observer-order', at: e.at, involved: [e.stream],
          evidence: `"${e.name}": observe stream ${e.stream} went back from term ${last} to ${token} at ${t(e.at)}` })
      }
      if (last === undefined || token > last) lastOfStream.set(e.stream, token)
    }
  }
  return found
}

/** observe() tries a read the store did not answer again after at most this long (docs/election.md). */
const OBSERVE_RETRY_CAP_MS = 5000

/**
 * An observe stream that went from one term to a later one without showing
 * a term that began and ended between the two, and lasted longer than
 * `boundMs`. observe() may show only the last of changes closer together
 * than one read, so a short term is no finding; a long one is: its notice
 * was lost and neither the re-read at the leader's lease end nor the retry
 * after a failed read made up for it.
 */
function skippedTerms(events: readonly HistoryEvent[], boundMs: number): Finding[] {
  const terms: { name: string; token: bigint; lease: string; start: number; end: number }[] = []
  const endOf = new Map<string, number>()
  for (const e of events) if ((e.type === 'end' || e.type === 'loss') && !endOf.has(e.lease)) endOf.set(e.lease, e.at)
  for (const e of events) {
    if (e.type !== 'grant' || e.primitive !== 'election') continue
    terms.push({ name: e.name, token: BigInt(e.token), lease: e.lease, start: e.at, end: Math.min(endOf.get(e.lease) ?? e.deadline, e.deadline) })
  }
  const lastOfStream = new Map<string, { at: number; token: bigint | null }>()
  const found: Finding[] = []
  for (const e of events) {
    if (e.type !== 'observation' || e.via !== 'observe') continue
    const token = e.token === null ? null : BigInt(e.token)
    const before = lastOfStream.get(e.stream)
    lastOfStream.set(e.stream, { at: e.at, token })
    if (!before) continue
    const skipped = terms.find((term) => term.name === e.name && term.start > before.at && term.end < e.at && term.end - term.start > boundMs &&
      (before.token === null || term.token > before.token) && (token === null || term.token < token))
    if (skipped) {
      found.push({ property: 'observer-skipped-term', at: e.at, involved: [e.stream, skipped.lease],
        evidence: `"${e.name}": observe stream ${e.stream} went from ${before.token ?? 'no leader'} (at ${t(before.at)}) to ${token ?? 'no leader'} (at ${t(e.at)}) without showing term ${skipped.token} (${skipped.lease}), which led from ${t(skipped.start)} to ${t(skipped.end)} (longer than ${boundMs} ms)` })
    }
  }
  return found
}

function leftovers(events: readonly HistoryEvent[]): Finding[] {
  return events.flatMap((e) => e.type === 'leftover' && (e.holders > 0 || e.waiters > 0) ? [{
    property: 'leftover-state' as const, at: e.at, involved: [e.name],
    evidence: `"${e.name}" still had ${e.holders} holder(s) and ${e.waiters} waiter(s) after every client had closed and every lease had run out`,
  }] : [])
}

/**
 * A waiter (acquire or campaign) that stayed waiting while its name was
 * free of every known hold for `boundMs`, and no waiter on that name had
 * asked before it (the first in line). A wait of a process killed
 * (client-kill) ends at the kill: it never completes, and counting it on
 * to the end of the run would both report it and hide every waiter behind it.
 */
function starvedWaiters(history: History, intervals: readonly Interval[], boundMs: number): Finding[] {
  // Each process's kills, in time order (a process may be killed again after it was started anew).
  const killsOf = new Map<number, number[]>()
  for (const e of history.events) {
    const process = e.type === 'fault' && e.kind === 'client-kill' ? /^process (\d+)$/.exec(e.target)?.[1] : undefined
    if (process !== undefined) killsOf.set(Number(process), [...(killsOf.get(Number(process)) ?? []), e.at].sort((a, b) => a - b))
  }
  const completedAt = new Map<string, number>()
  for (const e of history.events) if (e.type === 'complete') completedAt.set(e.op, e.at)
  // A wait never answered ends at the first kill of its process after it was asked, else at the run's end.
  const endOf = (w: Invoke) => completedAt.get(w.op) ?? Math.min(killsOf.get(w.process)?.find((at) => at >= w.at) ?? Infinity, history.endedAt)
  const waits = history.events.filter((e): e is Invoke => e.type === 'invoke' && (e.kind === 'acquire' || e.kind === 'campaign'))
  // By name, each in time order: a long history on few names stays near-linear (it was quadratic over every name's holds).
  const holdsOf = groupBy(intervals, (i) => [i.name])
  for (const list of holdsOf.values()) list.sort((a, b) => a.start - b.start)
  const waitsOf = groupBy(waits, (w) => w.names)
  for (const list of waitsOf.values()) list.sort((a, b) => a.at - b.at)
  const found: Finding[] = []
  for (const w of waits) {
    const until = endOf(w)
    for (const name of w.names) {
      let free = w.at
      for (const o of waitsOf.get(name)!) {
        if (o.at >= w.at) break
        const done = endOf(o)
        if (done > w.at) free = Math.max(free, done)
      }
      for (const i of holdsOf.get(name) ?? []) {
        if (i.start >= until) break
        if (i.end <= w.at) continue
        if (i.start - free > boundMs) break
        free = Math.max(free, i.end)
      }
      if (Math.min(until, history.endedAt) - free > boundMs) {
        found.push({ property: 'waiter-starved', at: free, involved: [w.op],
          evidence: `"${name}": ${w.op} (p${w.process}c${w.client}) was first in line and not granted for ${Math.round(until - free)} ms while no known hold had the name (bound ${boundMs} ms)` })
        break
      }
    }
  }
  return found
}

/** Items by each of their keys, in the items' order. */
function groupBy<T>(items: readonly T[], keys: (item: T) => readonly string[]): Map<string, T[]> {
  const groups = new Map<string, T[]>()
  for (const item of items) {
    for (const key of keys(item)) {
      const group = groups.get(key)
      if (group) group.push(item)
      else groups.set(key, [item])
    }
  }
  return groups
}

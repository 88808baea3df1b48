/**
 * Ghost grants: a hold the store shows that no call still in flight can
 * explain, owned by a client whose attempt on that name was reported
 * failed. A call whose caller was told it failed must never take effect
 * later without being undone (the core undoes an attempt it reports
 * failed; a driver must not run the attempt after that undo, nor drop
 * the undo).
 *
 * The evidence is order, never elapsed time. A read of the name (inspect,
 * or the holder a LOCK_TIMEOUT named) shows a hold whose owner and token no
 * grant of the history has, and whose owner belongs to client C. The hold was granted
 * after a moment L, by one of:
 *   - a grant of the name with a lower token was asked for at L (tokens
 *     of a name grow in grant order: token-order checks it);
 *   - the store, or the part of it that keeps the name, was emptied at L
 *     (a restart without persistence) before the read was asked.
 * If no call of C on the name that could have made it was in flight from
 * L until the read had answered (a call on a single name answered "busy"
 * had given back whatever it made by the time it answered, one answered
 * with a grant recorded its owner and this is not it; a multi-lock may have
 * held names under owners it gave up), and
 * an attempt of C on the name had failed before L, nothing
 * C was still doing can have made that hold: it is the failed attempt,
 * run after its caller had been told it failed, and not undone.
 */
import type { Property } from './exceptions.js'
import type { Complete, HistoryEvent, Invoke, SeenHolder } from './history.js'

/** A Finding of checker.ts (which calls this). */
interface GhostFinding {
  readonly property: Property
  readonly at: number
  readonly evidence: string
  readonly involved: readonly string[]
}

const push = <K, V>(map: Map<K, V[]>, key: K, value: V) => {
  const list = map.get(key)
  if (list) list.push(value)
  else map.set(key, [value])
}

/** Calls that can make a hold or a line entry (which a hand-over turns into a hold). */
const GRANTING = new Set(['acquire', 'tryAcquire', 'campaign', 'downgrade'])

interface Call {
  readonly invoke: Invoke
  readonly complete?: Complete
}

interface Read {
  readonly name: string
  readonly op: string
  readonly by: string
  readonly invokedAt: number
  readonly at: number
  readonly holders: readonly SeenHolder[]
  readonly via: string
}

export function ghostGrants(events: readonly HistoryEvent[], t: (ms: number) => string): GhostFinding[] {
  const actorOf = new Map<string, string>()
  const calls = new Map<string, Call>()
  const known = new Set<string>()
  /** Calls whose grants were recorded with their owners. */
  const granted = new Set<string>()
  const lowerBounds = new Map<string, { token: bigint; invokedAt: number; lease: string }[]>()
  const emptied: { at: number; names?: readonly string[]; kind: string }[] = []
  const namesOfLease = new Map<string, string[]>()
  const reads: Read[] = []
  for (const e of events) {
    if (e.type === 'client') actorOf.set(e.clientId, `p${e.process}c${e.client}`)
    else if (e.type === 'invoke') calls.set(e.op, { invoke: e })
    else if (e.type === 'complete') {
      const call = calls.get(e.op)
      if (call) calls.set(e.op, { ...call, complete: e })
      if (call && e.holder && call.invoke.names.length === 1) {
        reads.push({ name: call.invoke.names[0]!, op: e.op, by: `p${e.process}c${e.client}`, invokedAt: call.invoke.at, at: e.at, holders: [e.holder], via: `the holder its ${e.code} named` })
      }
    } else if (e.type === 'grant') {
      known.add(`${e.name}\0${e.token}`)
      if (e.owner !== undefined) granted.add(e.op)
      if (e.owner !== undefined) known.add(e.owner)
      push(namesOfLease, e.lease, e.name)
      const invokedAt = calls.get(e.op)?.invoke.at ?? e.at
      push(lowerBounds, e.name, { token: BigInt(e.token), invokedAt, lease: e.lease })
    } else if (e.type === 'end' && e.readToken !== undefined) {
      if (e.readOwner !== undefined) granted.add(`downgrade of ${e.lease}`)
      for (const name of namesOfLease.get(e.lease) ?? []) known.add(`${name}\0${e.readToken}`)
      if (e.readOwner !== undefined) known.add(e.readOwner)
    } else if (e.type === 'fault' && e.emptied) emptied.push({ ...e.emptied, kind: e.kind })
    else if (e.type === 'seen') {
      const invokedAt = calls.get(e.op)?.invoke.at ?? e.at
      reads.push({ name: e.name, op: e.op, by: e.process < 0 ? 'the runner' : `p${e.process}c${e.client}`, invokedAt, at: e.at, holders: e.holders, via: 'inspect' })
    }
  }
  const callsOf = new Map<string, Call[]>()
  for (const call of calls.values()) {
    for (const name of call.invoke.names) {
      push(callsOf, `p${call.invoke.process}c${call.invoke.client}\0${name}`, call)
    }
  }
  const found: GhostFinding[] = []
  const reported = new Set<string>()
  for (const read of reads) {
    for (const h of read.holders) {
      const actor = actorOf.get(h.owner.slice(0, h.owner.indexOf('.')))
      const id = `${read.name}\0${h.token}`
      if (!actor || known.has(id) || known.has(h.owner) || reported.has(id)) continue
      const token = BigInt(h.token)
      let after: { at: number; why: string } | undefined
      for (const g of lowerBounds.get(read.name) ?? []) {
        if (g.token < token && g.invokedAt <= read.invokedAt && (!after || g.invokedAt > after.at)) {
          after = { at: g.invokedAt, why: `${g.lease}, asked for at ${t(g.invokedAt)}, was granted the lower token ${g.token}` }
        }
      }
      for (const f of emptied) {
        if (f.at <= read.invokedAt && (!f.names || f.names.includes(read.name)) && (!after || f.at > after.at)) {
          after = { at: f.at, why: `the store keeping it was emptied at ${t(f.at)} (${f.kind})` }
        }
      }
      if (!after) continue
      const own = callsOf.get(`${actor}\0${read.name}`) ?? []
      // A call on one name answered busy left nothing once it answered, but a read while it was out may show
      // a grant of it that came too late to use and was being given back (the core answers such a grant as
      // busy after its undo: waiter.ts, deadOnArrival). One answered with its grant recorded its
      // owner (not this one). A multi-lock may have held some names meanwhile, under owners it gave up.
      const explained = (c: Call) => c.invoke.names.length === 1 && ((c.complete?.outcome === 'busy' && c.complete.at <= read.invokedAt) ||
        (c.complete?.outcome === 'ok' && granted.has(c.invoke.kind === 'downgrade' ? `downgrade of ${c.invoke.lease}` : c.invoke.op)))
      const inFlight = own.some((c) => GRANTING.has(c.invoke.kind) && !explained(c) && c.invoke.at < read.at && (c.complete?.at ?? Infinity) > after!.at)
      if (inFlight) continue
      const failed = own.filter((c) => GRANTING.has(c.invoke.kind) && c.complete?.outcome === 'error' && c.complete.at <= after!.at).at(-1)
      if (!failed) continue
      reported.add(id)
      const f = failed.complete!
      found.push({
        property: 'ghost-grant', at: read.at, involved: [failed.invoke.op, read.op],
        evidence: `"${read.name}": ${read.op} (${read.by}, ${read.via}) at ${t(read.at)} showed a hold of ${actor} (owner ${h.owner}, token ${h.token}) that no grant of the history has (owner or token); ` +
          `it was granted after ${t(after.at)} (${after.why}), when no call of ${actor} on the name was in flight; ` +
          `${actor}'s ${failed.invoke.kind} ${failed.invoke.op} had failed at ${t(f.at)} (${f.code ?? 'error'})`,
      })
    }
  }
  return found
}

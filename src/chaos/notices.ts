/**
 * loss-unnoticed: a hold a forced release removed, whose holder did not
 * see its loss (its signal, or an end of its own) within a bound, although
 * its process kept running meanwhile. The store tells a holder of a forced
 * release by a notice (pub/sub, a watch); without the notice it learns at
 * its next renewal (every ttl/3) or its deadline. Both are within the
 * contract (`held` is bound only by the deadline), so this is about time
 * passing: a warning, never a failure, unless the caller makes progress
 * strict.
 *
 * A hold counts when its holder knew it as held (granted, not yet ended,
 * its last known deadline not passed) from before the forced release was
 * invoked until after it answered true, and the holder's process was
 * neither stopped nor killed (client-stall, client-kill, … aimed at it)
 * from the invocation until the bound ran out, and recorded an event of
 * any kind after the bound ran out and before it saw the loss: it was
 * running, so a notice waiting in its socket would have been read.
 */
import type { Property } from './exceptions.js'
import type { Complete, Grant, HistoryEvent, Invoke } from './history.js'

/** A Finding of checker.ts (which calls this). */
interface NoticeFinding {
  readonly property: Property
  readonly at: number
  readonly evidence: string
  readonly involved: readonly string[]
}

/**
 * The default bound: 2 s, or ttl/4 for a longer ttl. A notice normally
 * arrives in tens of ms, so 2 s leaves a loaded machine two orders of
 * magnitude; it must stay below the fallbacks (a renewal every ttl/3, the
 * deadline) or nothing could ever show, so only runs with a ttl above 6 s
 * can find it (the default 1.5 s ttl never does: no noise in CI).
 */
export const lossNoticeBoundMs = (ttlMs: number): number => Math.max(2000, ttlMs / 4)

export function unnoticedLosses(events: readonly HistoryEvent[], boundMs: number, t: (ms: number) => string): NoticeFinding[] {
  const invokes = new Map<string, Invoke>()
  const grantsOf = new Map<string, Grant[]>()
  const seenAt = new Map<string, number[]>()
  const deadlines = new Map<string, { at: number; deadline: number }[]>()
  const eventsOf = new Map<number, number[]>()
  const outages: { process: number; from: number; to: number; what: string }[] = []
  const forced: { invoke: Invoke; complete: Complete }[] = []
  for (const e of events) {
    if (e.type === 'fault') {
      const process = /^process (\d+)$/.exec(e.target)?.[1]
      if (process !== undefined) outages.push({ process: Number(process), from: e.at, to: e.kind === 'client-kill' ? Infinity : e.healedAt ?? Infinity, what: e.kind })
      continue
    }
    if (e.type === 'leftover') continue
    eventsOf.set(e.process, [...(eventsOf.get(e.process) ?? []), e.at])
    if (e.type === 'invoke') invokes.set(e.op, e)
    else if (e.type === 'complete' && e.answer === true && invokes.get(e.op)?.kind === 'forceRelease') forced.push({ invoke: invokes.get(e.op)!, complete: e })
    else if (e.type === 'grant') grantsOf.set(e.name, [...(grantsOf.get(e.name) ?? []), e])
    else if (e.type === 'loss' || e.type === 'end') seenAt.set(e.lease, [...(seenAt.get(e.lease) ?? []), e.at])
    if (e.type === 'grant' || e.type === 'renew') deadlines.set(e.lease, [...(deadlines.get(e.lease) ?? []), { at: e.at, deadline: e.deadline }])
  }
  const found: NoticeFinding[] = []
  const reported = new Set<string>()
  for (const { invoke, complete } of forced) {
    for (const g of grantsOf.get(invoke.names[0]!) ?? []) {
      if (reported.has(g.lease) || g.at >= invoke.at) continue
      const seen = Math.min(...(seenAt.get(g.lease) ?? []).filter((at) => at >= g.at))
      if (seen <= complete.at) continue
      // The last deadline the holder knew when the forced release answered: past it, the lease itself says lost.
      const deadline = Math.max(...(deadlines.get(g.lease) ?? []).filter((d) => d.at <= complete.at).map((d) => d.deadline))
      const noticed = Math.min(seen, deadline)
      if (noticed - complete.at <= boundMs) continue
      if (outages.some((o) => o.process === g.process && o.from < complete.at + boundMs && o.to > invoke.at)) continue
      const alive = (eventsOf.get(g.process) ?? []).filter((at) => at > complete.at + boundMs && at < noticed)
      if (alive.length === 0) continue
      reported.add(g.lease)
      const how = seen <= deadline ? `saw it at ${t(seen)}` : `still knew it held until its deadline ${t(deadline)}`
      found.push({ property: 'loss-unnoticed', at: complete.at, involved: [invoke.op, g.lease],
        evidence: `"${g.name}": forced release ${invoke.op} (p${invoke.process}c${invoke.client}, invoked ${t(invoke.at)}) answered true at ${t(complete.at)}; ` +
          `${g.lease} (${g.primitive} ${g.mode}, token ${g.token}, p${g.process}c${g.client}, granted ${t(g.at)}) ${how}: ` +
          `${Math.round(noticed - complete.at)} ms to notice (bound ${boundMs} ms), while its process recorded ${alive.length} event(s) after the bound` })
    }
  }
  return found
}

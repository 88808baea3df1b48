/**
 * Holds as their holders knew them: from the grant to the first of the
 * release (or resign, or downgrade for the write side) being invoked, the
 * loss being seen, or the last deadline the client knew of. A forced
 * release ends every hold it may have dropped when it was invoked: the
 * store lets the next one in without waiting for the holder's signal, by
 * design (fencing protects that window). That includes a hold whose
 * acquire was out while the forced release ran: the store may have granted
 * it first and dropped it then, though its holder hears of the grant after.
 */
import type { Grant, HistoryEvent, HoldMode, Primitive } from './history.js'

export interface Interval {
  readonly lease: string
  readonly process: number
  readonly client: number
  readonly primitive: Primitive
  readonly name: string
  mode: HoldMode
  readonly token: string
  readonly weight: number
  readonly permits: number
  readonly start: number
  /** When the call that got this hold was invoked (the grant may have reached the store any time after). */
  readonly askedAt: number
  end: number
  /** What ended it: 'release', 'loss', 'deadline', 'forced', 'downgrade' … */
  endedBy: string
}

export function intervalsOf(events: readonly HistoryEvent[]): Interval[] {
  const grants = new Map<string, Grant[]>()
  // A multi-lock's parts are granted with deadlines of their own (each
  // name's store answer), so a part's is kept apart: the largest of them
  // taken for every part gave a part that had lapsed the deadline of
  // another, and a false two-holders (mysql seed 2902). A renewal is the
  // whole lease's (for a set, its earliest part), and raises every part.
  const partDeadline = new Map<string, number>()
  const deadline = new Map<string, number>()
  const ends = new Map<string, { at: number; by: string }>()
  const downgrades = new Map<string, number>()
  const invokedAt = new Map<string, number>()
  const endAt = (lease: string, at: number, by: string) => {
    const known = ends.get(lease)
    if (!known || at < known.at) ends.set(lease, { at, by })
  }
  for (const e of events) {
    switch (e.type) {
      case 'invoke':
        invokedAt.set(e.op, e.at)
        break
      case 'grant':
        grants.set(e.lease, [...(grants.get(e.lease) ?? []), e])
        partDeadline.set(`${e.lease}\0${e.name}`, Math.max(partDeadline.get(`${e.lease}\0${e.name}`) ?? 0, e.deadline))
        break
      case 'renew':
        // One with no time left (an extend that resolved after the lease lapsed) extends nothing: renewed-after-lapse.
        if (e.deadline <= e.at) break
        deadline.set(e.lease, Math.max(deadline.get(e.lease) ?? 0, e.deadline))
        break
      case 'end':
        if (e.why === 'downgrade') downgrades.set(e.lease, Math.min(downgrades.get(e.lease) ?? Infinity, e.at))
        else endAt(e.lease, e.at, e.why)
        break
      case 'loss':
        endAt(e.lease, e.at, 'loss')
    }
  }
  const intervals: Interval[] = []
  for (const [lease, parts] of grants) {
    const end = ends.get(lease)
    for (const g of parts) {
      const limit = Math.max(partDeadline.get(`${lease}\0${g.name}`)!, deadline.get(lease) ?? 0)
      const [at, by] = end && end.at < limit ? [end.at, end.by] : [limit, 'deadline']
      const base = {
        lease, process: g.process, client: g.client, primitive: g.primitive, name: g.name,
        token: g.token, weight: g.weight, permits: g.permits, start: g.at, askedAt: invokedAt.get(g.op) ?? g.at,
      }
      const downgradedAt = downgrades.get(lease)
      if (g.mode === 'write' && downgradedAt !== undefined && downgradedAt < at) {
        intervals.push({ ...base, mode: 'write', end: downgradedAt, endedBy: 'downgrade' })
        intervals.push({ ...base, mode: 'read', start: downgradedAt, end: at, endedBy: by })
      } else {
        intervals.push({ ...base, mode: g.mode, end: Math.max(g.at, at), endedBy: by })
      }
    }
  }
  cutAtForcedReleases(intervals, events)
  return intervals.sort((a, b) => a.start - b.start)
}

function cutAtForcedReleases(intervals: Interval[], events: readonly HistoryEvent[]): void {
  const invoked = new Map<string, { at: number; name: string }>()
  for (const e of events) {
    if (e.type === 'invoke' && e.kind === 'forceRelease') invoked.set(e.op, { at: e.at, name: e.names[0]! })
    if (e.type !== 'complete' || !invoked.has(e.op)) continue
    const force = invoked.get(e.op)!
    // A forced release that failed may still have reached the store: cut as if it had.
    for (const i of intervals) {
      // Asked for after the forced release was answered: it can not have dropped this hold.
      if (i.name !== force.name || i.askedAt >= e.at || i.end <= force.at) continue
      i.end = Math.max(i.start, force.at)
      i.endedBy = 'forced'
    }
  }
}

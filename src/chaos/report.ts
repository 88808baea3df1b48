/** What a chaos or verify run covered, and its verdict, as lines to print. */
import type { Finding, Verdict } from './checker.js'
import type { History } from './history.js'

export interface Coverage {
  /** Operations invoked, by primitive and kind ("mutex acquire"), with how they ended. */
  readonly ops: Record<string, { ok: number; busy: number; error: number }>
  readonly faults: Record<string, number>
  readonly holdsChecked: number
  readonly probes: number
  readonly writes: { accepted: number; refused: number }
  readonly observations: number
}

export function coverageOf(history: History, verdict: Verdict): Coverage {
  const kindOf = new Map<string, string>()
  const ops: Coverage['ops'] = {}
  const faults: Record<string, number> = Object.fromEntries((history.faultKinds ?? []).map((k) => [k, 0]))
  let probes = 0
  let observations = 0
  const writes = { accepted: 0, refused: 0 }
  for (const e of history.events) {
    if (e.type === 'invoke') kindOf.set(e.op, `${e.primitive} ${e.kind}`)
    else if (e.type === 'complete') {
      const kind = kindOf.get(e.op)
      if (kind) (ops[kind] ??= { ok: 0, busy: 0, error: 0 })[e.outcome]++
    } else if (e.type === 'fault') faults[e.kind] = (faults[e.kind] ?? 0) + 1
    else if (e.type === 'probe') probes++
    else if (e.type === 'observation') observations++
    else if (e.type === 'write') writes[e.accepted ? 'accepted' : 'refused']++
  }
  return { ops, faults, holdsChecked: verdict.holdsChecked, probes, writes, observations }
}

export function formatFinding(f: Finding, startedAt: number): string {
  const at = `+${((f.at - startedAt) / 1000).toFixed(3)} s`
  return `${f.property} at ${at}: ${f.evidence}${f.excusedBy ? `\n      known exception (${f.excusedBy.faults.join(', ')} on ${f.excusedBy.stores.join(', ')}): ${f.excusedBy.why}` : ''}`
}

export function formatRun(history: History, verdict: Verdict, replay: string): string {
  const c = coverageOf(history, verdict)
  const ops = Object.entries(c.ops).sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k} ${v.ok}${v.busy ? `/${v.busy} busy` : ''}${v.error ? `/${v.error} err` : ''}`)
  const faults = Object.entries(c.faults).map(([k, v]) => `${k} ${v}`)
  const lines = [
    `chaos ${history.store} seed ${history.seed}: ${((history.endedAt - history.startedAt) / 1000).toFixed(1)} s`,
    `  ops: ${ops.join(', ') || 'none'}`,
    `  faults: ${faults.join(', ') || 'none'}`,
    `  holds checked ${c.holdsChecked}, probes ${c.probes}, writes ${c.writes.accepted} accepted / ${c.writes.refused} refused, leader observations ${c.observations}`,
  ]
  const show = (title: string, list: readonly Finding[]) => {
    if (list.length === 0) return
    lines.push(`${title} (${list.length}):`)
    for (const f of list.slice(0, 20)) lines.push(`  ${formatFinding(f, history.startedAt)}`)
    if (list.length > 20) lines.push(`  … and ${list.length - 20} more`)
  }
  show('EXCUSED by a known exception', verdict.excused)
  show('WARNING (timing-dependent, not a verdict)', verdict.warnings)
  show('VIOLATION', verdict.violations)
  lines.push(verdict.violations.length === 0 ? 'PASS' : `FAIL: seed ${history.seed}; replay: ${replay}`)
  return lines.join('\n')
}

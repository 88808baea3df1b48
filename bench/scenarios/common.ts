import { createContender, specId, specLabel, type Contender, type ContenderSpec } from '../peers/index.js'
import { median, reasonOf } from '../report.js'
import type { Outcome } from '../util.js'

/** A contender as a scenario sees it: opened once, or failed to open. */
export interface Entrant {
  readonly id: string
  readonly label: string
  readonly spec: ContenderSpec
  contender?: Contender
  /** Why it could not take part at all ("failed: …" in its row). */
  setupError?: string
}

export async function openEntrants(specs: readonly ContenderSpec[], url: string): Promise<Entrant[]> {
  const entrants: Entrant[] = []
  for (const spec of specs) {
    const entrant: Entrant = { id: specId(spec), label: specLabel(spec), spec }
    try {
      entrant.contender = await createContender(spec, url)
    } catch (error) {
      entrant.setupError = reasonOf(error)
    }
    entrants.push(entrant)
  }
  return entrants
}

export async function closeEntrants(entrants: readonly Entrant[]): Promise<void> {
  await Promise.allSettled(entrants.map((e) => e.contender?.close()))
}

/** Entrants still able to run. */
export function ready(entrants: readonly Entrant[]): (Entrant & { contender: Contender })[] {
  return entrants.filter((e): e is Entrant & { contender: Contender } => !!e.contender && !e.setupError)
}

/** Median of a field over the successful runs. */
export function medianOf<T>(outcomes: readonly Outcome<T>[] | undefined, field: (t: T) => number): number {
  return median((outcomes ?? []).flatMap((o) => (o.ok ? [field(o.value)] : [])))
}

/** Outcomes of an entrant that never ran: one failure per run. */
export function failedRuns<T>(runs: number, reason: string): Outcome<T>[] {
  return Array.from({ length: runs }, () => ({ ok: false as const, reason }))
}

/** Filesystem- and lock-name-safe key part of a contender id. */
export function keyPart(id: string): string {
  return id.replace(/[^\w.-]/g, '-')
}

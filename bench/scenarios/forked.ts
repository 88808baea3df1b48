/**
 * Contended flows on one key, split over forked worker processes (figure 3
 * and the other multi-process scenarios): the workers are started once and
 * kept while they behave, each run's flows start together at a shared wall
 * clock instant, and their grant records are merged here.
 */
import { GRANT_FIELDS, type ContendedResult, type GrantRecords } from '../flows.js'
import type { ContenderSpec } from '../peers/index.js'
import type { BenchContext } from '../types.js'
import { wallNow } from '../util.js'
import type { CommandWindow } from '../worker-protocol.js'
import { WorkerProcess } from '../workers.js'

export interface ForkedOptions {
  processes: number
  flows: number
  holdMs: number
  /** How long flows still in line after the window may take to finish. */
  drainMs: number
  warmupMs: number
  windowMs: number
  /** Count the commands each worker's ioredis clients send during the window. */
  countCommands?: boolean
  /** Store URL of the workers' contenders (default: the benchmark's Redis). */
  url?: string
}

export interface ForkedRun {
  /** Grant records of every flow, merged (see flows.ts GRANT_FIELDS). */
  grants: GrantRecords
  /** The measured window [from, to), epoch ms; the warm-up is before it. */
  from: number
  to: number
  errors: Record<string, number>
  counters: Record<string, number>
  stuckFlows: number
  /** countCommands: commands sent per grant, each worker over its own counting window. */
  commandsPerGrant: number
}

export interface ForkedFlows {
  readonly flowIds: readonly number[]
  /**
   * One measurement of `spec` on `key`. `during(from, to)`, if given, runs in
   * this process while the flows run (e.g. INFO snapshots of the window).
   */
  run<W = undefined>(spec: ContenderSpec, key: string, during?: (from: number, to: number) => Promise<W>): Promise<ForkedRun & { during: W }>
  /** Stops the workers; call it when the scenario is done. */
  close(): Promise<void>
}

export function forkedFlows(ctx: BenchContext, o: ForkedOptions): ForkedFlows {
  const flowIds = Array.from({ length: o.flows }, (_, i) => i)
  const flowsOf = (p: number): number[] => flowIds.filter((id) => id % o.processes === p)
  let workers: WorkerProcess[] = []
  const dropWorkers = (): void => {
    for (const w of workers) w.kill()
    workers = []
  }
  const ensureWorkers = async (): Promise<WorkerProcess[]> => {
    if (workers.length !== o.processes) {
      dropWorkers()
      workers = await Promise.all(Array.from({ length: o.processes }, () => WorkerProcess.start({ url: o.url ?? ctx.redisUrl })))
    }
    return workers
  }

  return {
    flowIds,
    async run<W>(spec: ContenderSpec, key: string, during?: (from: number, to: number) => Promise<W>) {
      const ws = await ensureWorkers()
      let parts: (ContendedResult & { commands?: CommandWindow })[]
      let from = 0
      let to = 0
      let duringResult: W | undefined
      try {
        await Promise.all(ws.map((w) => w.call('prepare', { spec }, 15_000)))
        const startAt = wallNow() + 50
        from = startAt + o.warmupMs
        to = from + o.windowMs
        const countCommands = o.countCommands ? { from, to } : undefined
        const flows = Promise.all(ws.map((w, p) =>
          w.call(
            'flows',
            { spec, key, flowIds: flowsOf(p), startAt, stopAt: to, holdMs: o.holdMs, drainMs: o.drainMs, ...(countCommands ? { countCommands } : {}) },
            to - wallNow() + o.drainMs + 5000,
          )))
        const [all, d] = await Promise.all([flows, during?.(from, to)])
        parts = all
        duringResult = d
      } catch (error) {
        dropWorkers() // a stuck peer must not disturb the next measurement
        throw error
      }
      const stuckFlows = parts.reduce((n, p) => n + p.stuckFlows, 0)
      if (stuckFlows > 0) dropWorkers()
      return {
        grants: parts.flatMap((p) => p.grants),
        from,
        to,
        errors: mergeCounts(parts.map((p) => p.errors)),
        counters: mergeCounts(parts.map((p) => p.counters)),
        stuckFlows,
        commandsPerGrant: o.countCommands ? commandsPerGrant(parts) : NaN,
        during: duringResult as W,
      }
    },
    async close() {
      await Promise.allSettled(workers.map((w) => w.stop()))
      workers = []
    },
  }
}

/** Σ commands the workers sent ÷ Σ grants each saw within its own counting window. */
function commandsPerGrant(parts: readonly (ContendedResult & { commands?: CommandWindow })[]): number {
  let sent = 0
  let grants = 0
  for (const part of parts) {
    const w = part.commands
    if (!w) return NaN
    sent += w.sent
    for (let i = 0; i < part.grants.length; i += GRANT_FIELDS) {
      const grantAt = part.grants[i + 2]!
      if (grantAt >= w.from && grantAt < w.to) grants++
    }
  }
  // 0 sent with grants made: the counter no longer sees the client's commands.
  return grants > 0 && sent > 0 ? sent / grants : NaN
}

/** Why a run saw no hand-over at all, for its "failed: …" cell. */
export function noHandoffReason(windowMs: number, grants: number, r: { errors: Record<string, number>; stuckFlows: number }): string {
  const why = Object.keys(r.errors)[0]
  return `no hand-over to another flow in ${windowMs} ms (${grants} grants${r.stuckFlows ? `, ${r.stuckFlows} flows stuck in acquire/release` : ''}${why ? `; ${why}` : ''})`
}

export function mergeCounts(all: readonly Record<string, number>[]): Record<string, number> {
  const merged: Record<string, number> = {}
  for (const counts of all) for (const [k, n] of Object.entries(counts)) merged[k] = (merged[k] ?? 0) + n
  return merged
}

import type { ContendedOptions, ContendedResult } from './flows.js'
import type { ContenderSpec } from './peers/index.js'

/**
 * Tasks a bench worker (bench/worker.ts, a forked OS process) runs on
 * request over IPC. Add a task: declare it here and implement it in worker.ts.
 */
export interface WorkerTasks {
  /** Create (and keep) the contender, so connection setup is not measured. */
  prepare: { args: { spec: ContenderSpec }; result: null }
  /**
   * Contended acquire/hold/release flows on one key; see contendedFlows().
   * With `countCommands`, also what this worker's ioredis clients sent
   * between those two instants (epoch ms, wallNow()).
   */
  flows: {
    args: { spec: ContenderSpec; countCommands?: { from: number; to: number } } & ContendedOptions
    result: ContendedResult & { commands?: CommandWindow }
  }
}

/** Commands a worker sent in [from, to): the instants are when it actually read the counter. */
export interface CommandWindow {
  from: number
  to: number
  sent: number
}

export type TaskName = keyof WorkerTasks

/** argv[2] of a worker, as JSON. */
export interface WorkerArgs {
  url: string
}

export type ToWorker =
  | { type: 'task'; id: number; task: TaskName; args: unknown }
  | { type: 'exit' }

export type FromWorker =
  | { type: 'ready' }
  | { type: 'done'; id: number; result: unknown }
  | { type: 'failed'; id: number; reason: string }

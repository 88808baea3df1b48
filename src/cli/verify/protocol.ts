/**
 * Messages between `baton verify` and its worker processes (node IPC, JSON:
 * tokens travel as decimal strings because they may pass 2^53). A worker's
 * history (src/chaos/history.ts events) does not travel here: each worker
 * appends it to its own file with a synchronous write made before the call
 * it describes is sent, so a worker killed with -9 loses no event the store
 * could have acted on.
 */

/** `counter`: one lock, fenced read-modify-write cycles on a counter; the others: seeded chaos plans of that primitive (`mixed`: every one the store offers). */
export type Workload = 'counter' | 'mutex' | 'fair' | 'rwlock' | 'semaphore' | 'election' | 'multi' | 'mixed'
export const WORKLOADS: readonly Workload[] = ['counter', 'mutex', 'fair', 'rwlock', 'semaphore', 'election', 'multi', 'mixed']

/** The error codes that say the store did not answer, as against a refusal or a defect. */
export const UNAVAILABLE_CODES: readonly string[] = ['BACKEND_UNAVAILABLE', 'QUORUM_NOT_REACHED', 'REPLICA_ACK_TIMEOUT']

/** Worker → verifier. `at` is milliseconds of historyNow() (the machine's monotonic clock). */
export type WorkerMessage =
  /** The counter worker took (true) or gave up (false) the lock: where a pause hurts. */
  | { readonly type: 'holding'; readonly held: boolean }
  | { readonly type: 'read'; readonly id: number; readonly token: string }
  | { readonly type: 'write'; readonly id: number; readonly token: string; readonly lease: string; readonly value: number; readonly readVersion: number }
  /** A plan's fenced write of `name`. */
  | { readonly type: 'fenced-write'; readonly id: number; readonly name: string; readonly token: string; readonly lease: string; readonly client: number }
  | { readonly type: 'failed'; readonly message: string }
  /** connect() found the store not answering; the worker goes on trying. */
  | { readonly type: 'unavailable'; readonly during: 'connect'; readonly at: number; readonly message: string }

/** Verifier → worker. */
export type VerifierMessage =
  /** `accepted: false`: the counter refused the read, its token being stale. */
  | { readonly type: 'read'; readonly id: number; readonly accepted: boolean; readonly value: number; readonly version: number }
  | { readonly type: 'write'; readonly id: number; readonly accepted: boolean }
  /** Just resumed from a pause: read every lease held now (held, signal, remainingMs). */
  | { readonly type: 'probe' }
  | { readonly type: 'stop' }

/** What a worker is told at start (its argv carries it as JSON). */
export interface WorkerSettings {
  readonly url: string
  readonly workload: Workload
  /** The worker's number: the `process` of its history events. */
  readonly process: number
  /** Its history file (JSON lines). */
  readonly file: string
  /** Names of the run start with it (`baton-verify/<random>`). */
  readonly prefix: string
  readonly ttlMs: number
  /** Counter: how long each hold does its cycles. */
  readonly holdMs: number
  /** Plans: the seed, the primitives, clients per worker. */
  readonly seed: number
  readonly primitives: readonly string[]
  readonly clients: number
}

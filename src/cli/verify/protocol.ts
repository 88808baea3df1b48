/**
 * Messages between `baton verify` and its worker processes (node IPC, JSON:
 * tokens travel as decimal strings because they may pass 2^53).
 */

/**
 * Worker → verifier. `at` and `validUntil` are milliseconds of the machine's
 * monotonic clock (historyNow(), clock.ts: one clock for every process, never
 * stepped), never the wall clock.
 */
export type WorkerMessage =
  /** Acquire returned: the worker holds the lock until `validUntil` (its lease deadline) unless it reports `ended` first. */
  | { readonly type: 'granted'; readonly token: string; readonly at: number; readonly validUntil: number; readonly waitedMs: number }
  | { readonly type: 'read'; readonly id: number; readonly token: string }
  | { readonly type: 'write'; readonly id: number; readonly token: string; readonly value: number; readonly readVersion: number }
  /** Sent before the worker calls release (or gives the hold up): from here on it writes nothing under `token`. */
  | { readonly type: 'ended'; readonly token: string; readonly at: number }
  | { readonly type: 'failed'; readonly message: string }
  /** A call the store did not answer (BACKEND_UNAVAILABLE, QUORUM_NOT_REACHED); the worker goes on trying. */
  | { readonly type: 'unavailable'; readonly during: 'connect' | 'acquire' | 'release'; readonly at: number; readonly message: string }

/** Verifier → worker. */
export type VerifierMessage =
  /** `accepted: false`: the counter refused the read, its token being stale. */
  | { readonly type: 'read'; readonly id: number; readonly accepted: boolean; readonly value: number; readonly version: number }
  | { readonly type: 'write'; readonly id: number; readonly accepted: boolean; readonly highest?: string }
  | { readonly type: 'stop' }

/** What a worker is told at start (its argv carries it as JSON). */
export interface WorkerSettings {
  readonly url: string
  readonly name: string
  readonly ttlMs: number
  /** How long a worker keeps each hold, doing read-modify-write cycles. */
  readonly holdMs: number
}

/**
 * Vote collection for Redlock: one request sent to every node at once, each
 * node bounded by its own short timeout, resolved early as soon as the
 * outcome can no longer change (a majority reached, or out of reach).
 */
import { DeadlineQueue } from '../../core/deadline-queue.js'

/** What one node did with one request. */
export type Answer<T> =
  | { readonly kind: 'answered'; readonly value: T }
  | { readonly kind: 'failed'; readonly error: unknown }
  | { readonly kind: 'timeout' }
  /** Not waited for: the outcome was decided without it. */
  | { readonly kind: 'skipped' }

/** A request for one node, or why it was not sent (not connected). */
export type NodeCall<T> = (() => Promise<T>) | string

/** What a node's answer does besides counting: record a grant (called for late answers too). */
export interface AnswerHooks<T> {
  answered?(index: number, value: T): void
  failed?(index: number): void
}

/**
 * Sends every call at once and resolves with one answer per node when all
 * have answered, `settled` says the outcome is decided, or `deadlines`' timeout
 * passed. A node that has not answered by then counts as `timeout`; its
 * late answer still runs `hooks` (the caller records late grants there, so
 * they are released with the rest).
 */
export function gather<T>(
  calls: readonly NodeCall<T>[], deadlines: VoteDeadlines, settled: (answers: readonly (Answer<T> | undefined)[]) => boolean,
  hooks?: AnswerHooks<T>,
): Promise<Answer<T>[]> {
  return new Promise((resolve) => {
    const answers: (Answer<T> | undefined)[] = new Array(calls.length).fill(undefined)
    let open = true
    let pending = calls.length
    const finish = (late: Answer<T>): void => {
      if (!open) return
      open = false
      deadline.done = true
      for (let i = 0; i < answers.length; i++) answers[i] ??= late
      resolve(answers as Answer<T>[])
    }
    const note = (index: number, answer: Answer<T>): void => {
      if (!open) return
      answers[index] = answer
      pending -= 1
      if (pending === 0 || settled(answers)) finish({ kind: 'skipped' })
    }
    // The deadline is set first so that a call failing synchronously finds it.
    const deadline = deadlines.add(() => finish({ kind: 'timeout' }))
    calls.forEach((call, index) => {
      if (typeof call === 'string') return note(index, { kind: 'failed', error: new Error(call) })
      call().then(
        (value) => {
          hooks?.answered?.(index, value)
          note(index, { kind: 'answered', value })
        },
        (error: unknown) => {
          hooks?.failed?.(index)
          note(index, { kind: 'failed', error })
        },
      )
    })
  })
}

export interface Deadline {
  readonly expire: () => void
  done: boolean
}

/**
 * The vote timeouts of one Redlock client, on one timer (DeadlineQueue): a
 * timer set and cleared per gather (two a pair) was measurable in the
 * client's CPU per pair.
 */
export class VoteDeadlines {
  private readonly queue: DeadlineQueue<Deadline>

  /** `now`: the clock the deadlines are read on (a test passes its own, so it asserts no timing). */
  constructor(readonly timeoutMs: number, now?: () => number) {
    this.queue = new DeadlineQueue<Deadline>(timeoutMs, (deadline) => deadline.done, (deadline) => {
      deadline.done = true
      // Answers that already arrived but wait behind this timer in the
      // event loop (a stalled loop runs timers before I/O) are read first.
      setImmediate(deadline.expire)
    }, now)
  }

  add(expire: () => void): Deadline {
    const deadline: Deadline = { expire, done: false }
    this.queue.add(deadline)
    return deadline
  }

  /** Expires what is past its deadline (the timer calls it). */
  readonly sweep = (): void => this.queue.sweep()

  close(): void {
    this.queue.close()
  }
}

/** Votes needed out of `nodes`: more than half. */
export const majorityOf = (nodes: number): number => Math.floor(nodes / 2) + 1

/**
 * Clock drift allowance of a lease of `ttlMs` (node-redlock's rule): the
 * nodes' clocks may run a little fast, so the client trusts less than the ttl.
 */
export function driftMs(ttlMs: number, factor: number, fixedMs: number): number {
  return Math.ceil(ttlMs * factor) + fixedMs
}

/** Redlock validity: what is left of the lease once the votes are in. */
export function validityMs(ttlMs: number, elapsedMs: number, drift: number): number {
  return ttlMs - elapsedMs - drift
}

/** A node's failure, in words for QUORUM_NOT_REACHED's per-node causes. */
export function describeFailure(answer: Answer<unknown>, timeoutMs: number): string {
  if (answer.kind === 'timeout') return `no answer within ${timeoutMs} ms (raise "timeout" in the store URL if the nodes are just slow)`
  if (answer.kind === 'skipped') return 'not waited for (the outcome was decided without it)'
  if (answer.kind === 'failed') return answer.error instanceof Error ? answer.error.message : String(answer.error)
  return 'answered'
}

/** Every node has answered (or failed): nothing more will come in time. */
export function answeredAll(partial: readonly (Answer<unknown> | undefined)[]): boolean {
  return partial.every((a) => a !== undefined)
}

/** Timing helpers of the benchmark flows, shared by `baton bench` and bench/. */
import { performance } from 'node:perf_hooks'

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** Epoch milliseconds with sub-ms precision, comparable across processes. */
export function wallNow(): number {
  return performance.timeOrigin + performance.now()
}

/** Rejects with `what timed out` after `ms`; the timer never keeps the process alive. */
export async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} did not finish within ${Math.round(ms)} ms`)), ms)
        timer.unref()
      }),
    ])
  } finally {
    clearTimeout(timer)
  }
}

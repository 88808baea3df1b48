import { performance } from 'node:perf_hooks'

/** Monotonic milliseconds: for elapsed time and lease deadlines, never wall clock. */
export const monotonicNow = (): number => performance.now()

import { sleep } from '../util.js'
import type { Contender, Release } from './types.js'

/**
 * A baseline contender that waits by trying again every `retryMs` (1 ms), up
 * to `waitMs`; 0 tries again as soon as the last answer came (a spin: one
 * attempt in flight per flow, always).
 */
export function pollingContender(
  label: string, waitMs: number, attempt: (key: string) => Promise<Release | null>, close: () => Promise<void>, retryMs = 1,
): Contender {
  return {
    label,
    tryAcquire: attempt,
    async acquire(key) {
      const deadline = Date.now() + waitMs
      for (;;) {
        const release = await attempt(key)
        if (release) return release
        if (Date.now() >= deadline) throw new Error(`${label}: "${key}" still taken after ${waitMs} ms`)
        if (retryMs > 0) await sleep(retryMs)
      }
    },
    close,
  }
}

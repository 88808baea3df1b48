import { sleep } from '../util.js'
import type { Contender, Release } from './types.js'

/** A baseline contender that waits by trying again every 1 ms, up to `waitMs`. */
export function pollingContender(
  label: string, waitMs: number, attempt: (key: string) => Promise<Release | null>, close: () => Promise<void>,
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
        await sleep(1)
      }
    },
    close,
  }
}

import type { Redis } from 'ioredis'
import { closeNodes, openNodes } from './redis-client.js'
import type { Contender, PeerOptions, Profile } from './types.js'

/** The API both redlock packages share. */
interface RedlockLike {
  on(event: 'error', listener: (error: unknown) => void): unknown
  acquire(resources: string[], duration: number): Promise<{ release(): Promise<unknown> }>
}

export interface RedlockSettings {
  retryCount?: number
  retryDelay?: number
  retryJitter?: number
}

/** 'fast': retry every 1 ms (no jitter) for as long as the wait allows. 'default': the library's own (10 × 200±100 ms). */
export function redlockSettings(profile: Profile, waitMs: number): RedlockSettings {
  return profile === 'fast' ? { retryCount: Math.ceil(waitMs), retryDelay: 1, retryJitter: 0 } : {}
}

export function redlockProfileLabel(profile: Profile): string {
  return profile === 'fast' ? 'retry 1 ms' : 'defaults: retry 200±100 ms ×10'
}

/**
 * Shared adapter for node-redlock and @sesamecare-oss/redlock (same API), on
 * one ioredis client. When the library's retries run out before our wait
 * does, acquire() calls it again (counted as "retries ran out"), so "wait 30 s"
 * means the same for every contender.
 */
export async function redlockContender(
  label: string,
  options: PeerOptions,
  make: (clients: Redis[], settings: RedlockSettings) => RedlockLike,
  isRetryExhaustion: (error: unknown) => boolean,
): Promise<Contender> {
  const clients = await openNodes(options.url)
  const redlock = make(clients, redlockSettings(options.profile, options.waitMs))
  // Both emit 'error' for every failed attempt (a busy key included); an
  // EventEmitter 'error' without a listener would crash the process.
  redlock.on('error', () => {})
  let exhausted = 0
  return {
    label,
    async acquire(key) {
      const deadline = Date.now() + options.waitMs
      for (;;) {
        try {
          const lock = await redlock.acquire([key], options.ttlMs)
          return async () => {
            await lock.release()
          }
        } catch (error) {
          if (!isRetryExhaustion(error) || Date.now() >= deadline) throw error
          exhausted += 1
        }
      }
    },
    counters: () => ({ 'retries ran out': exhausted }),
    close: () => closeNodes(clients),
  }
}

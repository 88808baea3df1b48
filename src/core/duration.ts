import { invalidArgument } from './errors.js'

/** A number of milliseconds, or a string such as '250ms', '30s', '5m', '1h'. */
export type Duration = number | string

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }
const PATTERN = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)$/

/** Longest duration accepted anywhere: beyond this, timers and stores misbehave. */
export const MAX_DURATION_MS = 2 ** 31 - 1

export interface DurationRules {
  /** Allow 0 (e.g. `wait: 0` means "do not wait"). */
  allowZero?: boolean
}

/**
 * Parses a duration into whole milliseconds. `setting` names the option in the
 * error message so that a user knows which value to fix.
 */
export function parseDuration(value: unknown, setting: string, rules: DurationRules = {}): number {
  let ms: number
  if (typeof value === 'number') {
    ms = value
  } else if (typeof value === 'string') {
    const match = PATTERN.exec(value.trim())
    if (!match) {
      throw invalidArgument(
        `"${setting}" must be a number of milliseconds or a string like '250ms', '30s', '5m', got ${JSON.stringify(value)}`,
      )
    }
    ms = Number(match[1]) * UNIT_MS[match[2]!]!
  } else {
    throw invalidArgument(`"${setting}" must be a number of milliseconds or a duration string, got ${describe(value)}`)
  }
  if (!Number.isFinite(ms)) throw invalidArgument(`"${setting}" must be finite, got ${describe(value)}`)
  if (ms < 0) throw invalidArgument(`"${setting}" must not be negative, got ${describe(value)}`)
  if (ms === 0 && !rules.allowZero) throw invalidArgument(`"${setting}" must be greater than 0, got ${describe(value)}`)
  if (ms > MAX_DURATION_MS) throw invalidArgument(`"${setting}" must be at most ${MAX_DURATION_MS} ms, got ${describe(value)}`)
  const whole = Math.ceil(ms)
  return whole
}

function describe(value: unknown): string {
  if (typeof value === 'number') return String(value)
  if (typeof value === 'string') return JSON.stringify(value)
  if (value === null) return 'null'
  return typeof value
}

/** Shortest lease: the watchdog must be able to renew it in time. */
export const MIN_TTL_MS = 10

/** A lease length (`ttl`, `lease.extend(ttl)`): a duration from 10 ms to MAX_DURATION_MS. */
export function parseTtl(value: unknown, setting = 'ttl'): number {
  const ttlMs = parseDuration(value, setting)
  if (ttlMs < MIN_TTL_MS) {
    throw invalidArgument(`"${setting}" must be at least ${MIN_TTL_MS} ms so the lease can be renewed in time, got ${ttlMs} ms`)
  }
  return ttlMs
}

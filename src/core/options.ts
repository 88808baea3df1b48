import { parseDuration, type Duration } from './duration.js'
import { invalidArgument } from './errors.js'

/** Checks that `value` is undefined or a plain options object with only `allowed` keys. */
export function checkOptions<T extends object>(value: unknown, what: string, allowed: readonly string[]): Partial<T> {
  if (value === undefined || value === null) return {}
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw invalidArgument(`${what} options must be an object, got ${Array.isArray(value) ? 'an array' : typeof value}`)
  }
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) {
      throw invalidArgument(`${what} has no option "${key}"; known options: ${allowed.join(', ')}`)
    }
  }
  return value as Partial<T>
}

export function optionalBoolean(value: unknown, setting: string, fallback: boolean): boolean {
  if (value === undefined) return fallback
  if (typeof value !== 'boolean') throw invalidArgument(`"${setting}" must be true or false, got ${typeof value}`)
  return value
}

/** `wait`: a duration, 0 for "do not wait", or Infinity / undefined for "until granted". */
export function parseWait(value: unknown, fallback: number): number {
  if (value === undefined) return fallback
  if (value === Infinity) return Infinity
  return parseDuration(value as Duration, 'wait', { allowZero: true })
}

export function parseSignal(value: unknown): AbortSignal | undefined {
  if (value === undefined) return undefined
  if (!(value instanceof AbortSignal)) throw invalidArgument('"signal" must be an AbortSignal')
  return value
}

export function parsePermits(value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 1_000_000) {
    throw invalidArgument(`"permits" must be a whole number from 1 to 1000000, got ${typeof value === 'number' ? value : typeof value}`)
  }
  return value
}

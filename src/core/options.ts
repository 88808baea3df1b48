import { parseDuration, type Duration } from './duration.js'
import { hostname } from 'node:os'
import { MAX_DESCRIPTION_BYTES } from './driver.js'
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

/**
 * Weighted permits: `acquire({ weight })` of a semaphore of `permits`. A
 * weight above `permits` could never be granted, so it is refused here
 * rather than left to wait forever.
 */
export function parseWeight(value: unknown, permits: number): number {
  if (value === undefined) return 1
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > permits) {
    const got = typeof value === 'number' ? String(value) : typeof value
    const why = typeof value === 'number' && Number.isInteger(value) && value > permits
      ? `: a hold heavier than the semaphore's ${permits} permits could never be granted`
      : ''
    throw invalidArgument(`"weight" must be a whole number from 1 to ${permits} (the semaphore's permits), got ${got}${why}`)
  }
  return value
}

/** Who asks for a lock, for operators: what `AcquireRequest.description` carries, as JSON. */
export interface Description {
  /** The machine. */
  host: string
  pid: number
  /** connect()'s `clientName`: what the program calls itself. */
  client?: string
  /** The command `baton run` runs. */
  cmd?: string
}

/**
 * The description's JSON text, within MAX_DESCRIPTION_BYTES: the command is
 * shortened first (ending in "…"), then the client name, then the host.
 */
export function buildDescription(who: Description): string {
  const fields: Description = { ...who }
  const size = () => Buffer.byteLength(JSON.stringify(fields))
  for (const key of ['cmd', 'client', 'host'] as const) {
    const text = fields[key]
    if (text === undefined || size() <= MAX_DESCRIPTION_BYTES) continue
    // Drop characters from the end until the JSON fits, "…" included (bytes as JSON writes them).
    const chars = [...text]
    let excess = size() - MAX_DESCRIPTION_BYTES + Buffer.byteLength('…')
    while (excess > 0 && chars.length > 0) excess -= Buffer.byteLength(JSON.stringify(chars.pop()).slice(1, -1))
    fields[key] = `${chars.join('')}…`
  }
  return JSON.stringify(fields)
}

/** This process's description (host, pid) with a client name and command when given. */
export function describeProcess(client?: string, cmd?: string): string {
  return buildDescription({
    host: hostname(), pid: process.pid,
    ...(client !== undefined ? { client } : {}),
    ...(cmd !== undefined ? { cmd } : {}),
  })
}

/** The client name of connect(): short text for people. */
export function parseClientName(value: unknown): string | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'string' || value.length === 0 || value.length > 128) {
    throw invalidArgument(`"clientName" must be a string of 1 to 128 characters, got ${typeof value === 'string' ? `${value.length} characters` : typeof value}`)
  }
  return value
}

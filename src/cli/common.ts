/**
 * What every `baton` command shares: argument parsing (node's util.parseArgs,
 * strict), the exit-code table, the store URL and output helpers. Kept free of
 * store clients so `baton --help` and `baton run` load as little as possible.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util'
import { parseDuration } from '../core/duration.js'
import { isBatonError, type ErrorCode } from '../core/errors.js'
import { parseStoreUrl } from '../core/url.js'

/**
 * Exit codes, the same for every command (README "Exit codes"). 75 is
 * EX_TEMPFAIL ("try again later"), 69 EX_UNAVAILABLE, 77 EX_NOPERM (sysexits.h).
 */
export const EXIT = {
  ok: 0,
  /** Anything else that went wrong. */
  failure: 1,
  /** Bad usage: unknown flag, missing argument, bad value. */
  usage: 2,
  /** inspect / release --force: nobody holds or awaits the name. */
  notFound: 3,
  /** run: the hold was lost while the command ran; the command was stopped. */
  lost: 70,
  /** The store did not answer (or too few nodes did). */
  unavailable: 69,
  /** run: the lock was not had within --wait, or at once with --nonblock (-E changes it). */
  conflict: 75,
  /** The store (a baton server) refused the credentials or the right. */
  noPermission: 77,
} as const

const EXIT_BY_CODE: Partial<Record<ErrorCode, number>> = {
  INVALID_ARGUMENT: EXIT.usage,
  LOCK_TIMEOUT: EXIT.conflict,
  LEASE_LOST: EXIT.lost,
  BACKEND_UNAVAILABLE: EXIT.unavailable,
  QUORUM_NOT_REACHED: EXIT.unavailable,
  UNAUTHORIZED: EXIT.noPermission,
  FORBIDDEN: EXIT.noPermission,
}

export function exitCodeOf(error: unknown): number {
  if (error instanceof UsageError) return EXIT.usage
  return (isBatonError(error) && EXIT_BY_CODE[error.code]) || EXIT.failure
}

/** Bad command-line usage: printed as one line plus the command's usage, exit 2. */
export class UsageError extends Error {
  override name = 'UsageError'
}

/** One command of the `baton` binary. `usage` is a line or two; `help` the full text with examples. */
export interface Command {
  readonly usage: string
  readonly help: string
  main(args: string[]): Promise<number>
}

type Options = NonNullable<ParseArgsConfig['options']>

/**
 * util.parseArgs in strict mode, with its errors turned into UsageError and
 * `-h`/`--help` recognised anywhere before `--`. Returns undefined for help.
 */
export function parse<O extends Options>(
  args: string[], options: O, positionals: { min: number; max?: number; names: string },
): { values: ReturnType<typeof parseArgs<{ options: O; allowPositionals: true; strict: true }>>['values']; positionals: string[] } | undefined {
  const end = args.indexOf('--')
  const before = end < 0 ? args : args.slice(0, end)
  if (before.includes('--help') || before.includes('-h')) return undefined
  let result
  try {
    result = parseArgs({ args, options, allowPositionals: true, strict: true })
  } catch (error) {
    // parseArgs messages are long and suggest `--` tricks; keep their first sentence.
    const message = error instanceof Error ? error.message.split('. ')[0]!.replace(/\.$/, '') : String(error)
    throw new UsageError(message)
  }
  const count = result.positionals.length
  if (count < positionals.min) throw new UsageError(`missing ${positionals.names}`)
  if (positionals.max !== undefined && count > positionals.max) {
    throw new UsageError(`unexpected argument "${result.positionals[positionals.max]}"`)
  }
  return { values: result.values, positionals: result.positionals }
}

/** The common `--store URL` flag. */
export const STORE_OPTION = { store: { type: 'string' } } as const
export const JSON_OPTION = { json: { type: 'boolean' } } as const

/**
 * The store from --store or BATON_URL. A memory:// store is refused unless
 * `allowMemory`: it lives inside this one process, so no other could see a lock in it.
 */
export function storeUrl(flag: string | undefined, allowMemory = false): string {
  const url = flag ?? process.env.BATON_URL
  if (!url) throw new UsageError('no store given: pass --store URL or set BATON_URL (e.g. redis://127.0.0.1:6379 or http://baton-server:7420)')
  const parsed = parseStoreUrl(url)
  if (parsed.scheme === 'memory' && !allowMemory) {
    throw new UsageError(`${parsed.display} is a store inside this one process, so no other process could see its locks; use a shared store such as redis://host:6379 or http://baton-server:7420`)
  }
  return url
}

/** A duration flag ('30s', '250ms', or bare milliseconds). */
export function durationFlag(value: string, flag: string, allowZero = false): number {
  return parseDuration(/^\d+$/.test(value) ? Number(value) : value, flag, { allowZero })
}

/** A whole-number flag within [min, max]. */
export function intFlag(value: string, flag: string, min: number, max: number): number {
  const n = Number(value)
  if (!/^\d+$/.test(value) || !Number.isInteger(n) || n < min || n > max) {
    throw new UsageError(`${flag} must be a whole number from ${min} to ${max}, got "${value}"`)
  }
  return n
}

/** "12.3s", "4m05s", "expired" — time left until `epochMs`, for people. */
export function timeLeft(epochMs: number, now = Date.now()): string {
  const left = epochMs - now
  if (left <= 0) return 'expired'
  if (left < 10_000) return `${(left / 1000).toFixed(1)}s`
  if (left < 3_600_000) {
    const s = Math.floor(left / 1000)
    return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`
  }
  return `${(left / 3_600_000).toFixed(1)}h`
}

/** Plain text table: columns padded to their widest cell, two spaces apart. */
export function textTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const line = (cells: readonly string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ').trimEnd()
  return [line(headers), ...rows.map(line)].join('\n')
}

/** JSON with bigint fence tokens as decimal strings (they can pass 2^53), as the HTTP API sends them. */
export function toJson(value: unknown): string {
  return JSON.stringify(value, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2)
}

export const print = (text: string): void => void process.stdout.write(`${text}\n`)
export const warn = (text: string): void => void process.stderr.write(`${text}\n`)

/**
 * What every `baton` command shares: argument parsing (node's util.parseArgs,
 * strict), the exit-code table, the store URL and output helpers. Kept free of
 * store clients so `baton --help` and `baton run` load as little as possible.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util'
import { type ErrorCode, isBatonError } from '../index.js'
import { parseDuration, parseStoreUrl } from '../internal-api.js'

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
  REPLICA_ACK_TIMEOUT: EXIT.unavailable,
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
  let parsed
  try {
    parsed = parseStoreUrl(url)
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message.replace(/^baton: /, '') : String(error))
  }
  if (parsed.scheme === 'memory' && !allowMemory) {
    throw new UsageError(`${parsed.display} is a store inside this one process, so no other process could see its locks; use a shared store such as redis://host:6379 or http://baton-server:7420`)
  }
  return url
}

/**
 * A duration flag: '250ms', '30s', '5m', '1h', or a bare number of SECONDS,
 * as flock -w, timeout(1), etcdctl and consul read one (the library's bare
 * numbers are milliseconds; on a command line people write seconds).
 */
export function durationFlag(value: string, flag: string, allowZero = false): number {
  const seconds = /^\d+(?:\.\d+)?$/.test(value.trim()) ? Number(value) * 1000 : undefined
  try {
    return parseDuration(seconds ?? value, flag, { allowZero })
  } catch (error) {
    const detail = isBatonError(error, 'INVALID_ARGUMENT') ? error.message.replace(/^baton: "[^"]*" /, '') : String(error)
    throw new UsageError(`${flag} ${detail.replace('a number of milliseconds or a string like', 'a number of seconds or a duration like').replace(/ of milliseconds/, ' of seconds')}`)
  }
}

/** The line every command's --help ends its options with. */
export const DURATIONS_NOTE = 'Durations: a bare number is seconds (10 = 10s), or 250ms, 30s, 5m, 1h.'

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

/**
 * Resolves once everything written to stdout and stderr has been handed to
 * the OS. A pipe takes 64 KiB at a time and node writes the rest later, so
 * exiting before this cuts piped output short (with exit 0).
 */
export function flushOutput(): Promise<void> {
  const drained = (stream: NodeJS.WriteStream) => new Promise<void>((resolve) => {
    if (stream.destroyed || !stream.writable) return resolve()
    stream.write('', () => resolve())
  })
  return Promise.all([drained(process.stdout), drained(process.stderr)]).then(() => undefined)
}
export const warn = (text: string): void => void process.stderr.write(`${text}\n`)

/**
 * The library's advice names connect() options and methods; on the command
 * line the same advice is a flag. Rewritten here, so the library's messages
 * stay right for library users.
 */
export function cliAdvice(message: string): string {
  return message
    .replace(/, or raise "connectTimeout" \/ "commandTimeout" in connect\(\) options/, ' (the --store URL or BATON_URL)')
    .replace(/, or raise "connectTimeout"/, ', or check the --store URL')
    .replace(/\(raise "ttl", or use autoExtend \/ using\(\)\)/, '(raise --ttl)')
    .replace(/raise "wait" to wait longer/, 'raise --wait to wait longer')
}

/**
 * Splits a command line of the form `[options] <name> [options] <command…>`
 * (or `… -- <command…>`): options may come before and after the name; the
 * first argument after the name that is not an option starts the command,
 * and everything from there on is the command's, its own options included
 * (`baton run x ls -l f`). `--` ends the options explicitly.
 */
export function splitCommand(args: readonly string[], options: Options): { options: string[]; command: string[] } {
  let named = false
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg === '--') return { options: args.slice(0, i), command: args.slice(i + 1) }
    if (arg.startsWith('-') && arg !== '-') {
      if (takesValue(arg, options)) i++
      continue
    }
    if (!named) {
      named = true
      continue
    }
    return { options: args.slice(0, i), command: args.slice(i) }
  }
  return { options: [...args], command: [] }
}

/** Whether the option `arg` takes its value from the next argument. */
function takesValue(arg: string, options: Options): boolean {
  if (arg.startsWith('--')) return !arg.includes('=') && options[arg.slice(2)]?.type === 'string'
  // A cluster of short flags (-nw 10): only its last letter can take the next argument.
  for (let k = 1; k < arg.length; k++) {
    const option = Object.values(options).find((o) => o.short === arg[k])
    if (option?.type === 'string') return k === arg.length - 1
  }
  return false
}

/** "250ms", "10s", "2m30s", "1h05m": a duration for people, in the flags' own format. */
export function formatDuration(totalMs: number): string {
  if (totalMs < 1000) return `${Math.round(totalMs)}ms`
  const s = Math.floor(totalMs / 1000)
  if (s < 60) return totalMs % 1000 === 0 || s >= 10 ? `${s}s` : `${(totalMs / 1000).toFixed(1)}s`
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`
  const h = Math.floor(s / 3600)
  return h < 48 ? `${h}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m` : `${Math.floor(h / 24)}d`
}

/** How long ago `epochMs` was: "3m02s". */
export function age(epochMs: number, now = Date.now()): string {
  return formatDuration(Math.max(0, now - epochMs))
}

/**
 * A hold's description (JSON text: host, pid, client, cmd) as one short
 * line: "web-1 pid 4242 baton run: ./deploy.sh". Text that is not the
 * core's JSON is shown as it is.
 */
export function whoText(description: string | undefined): string {
  if (!description) return ''
  let who: { host?: unknown; pid?: unknown; client?: unknown; cmd?: unknown }
  try {
    who = JSON.parse(description) as typeof who
  } catch {
    return description
  }
  if (!who || typeof who !== 'object') return description
  const parts = [
    typeof who.host === 'string' ? who.host : '',
    typeof who.pid === 'number' ? `pid ${who.pid}` : '',
    typeof who.client === 'string' ? `${who.client}${typeof who.cmd === 'string' ? ':' : ''}` : '',
    typeof who.cmd === 'string' ? who.cmd : '',
  ]
  return parts.filter(Boolean).join(' ')
}

/** A hold's or waiter's mode for tables: "permit ×3" for a weighted permit, the mode alone otherwise. */
export function modeText(entry: { mode: string; weight?: number }): string {
  return entry.weight !== undefined && entry.weight > 1 ? `${entry.mode} ×${entry.weight}` : entry.mode
}

import { Baton } from './baton.js'
import { parseDuration, type Duration } from './core/duration.js'
import { invalidArgument } from './core/errors.js'
import { checkOptions, describeProcess, parseClientName } from './core/options.js'
import { newClientId } from './core/owner.js'
import { checkUrlOptions, inspectAs, parseStoreUrl } from './core/url.js'
import { factoryFor, knownSchemes, urlOptionsOf } from './drivers/registry.js'

/** How long an idle name's state (its fence counter included) is kept: see DriverOptions.fenceTtlMs. */
const DEFAULT_FENCE_TTL = '1h'

export interface ConnectOptions {
  /** How long to wait for the store at connect time. Default '5s'. */
  connectTimeout?: Duration
  /** How long one store command may take before it counts as a failure. Default '2s'. */
  commandTimeout?: Duration
  /**
   * What this program calls itself, shown to operators beside each hold and
   * waiter with the host and pid (`baton ls`, `inspect`, the dashboard, busy
   * messages). Up to 128 characters.
   */
  clientName?: string
}

/**
 * Connects to a store. No URL (or 'memory://') gives the in-process store.
 * @example
 * const baton = await connect('redis://127.0.0.1:6379')
 * const lease = await baton.mutex('orders/42').acquire({ wait: '10s' })
 */
export async function connect(url?: string | URL, options?: ConnectOptions): Promise<Baton> {
  const opts = checkOptions<ConnectOptions>(options, 'connect()', ['connectTimeout', 'commandTimeout', 'clientName'])
  const clientName = parseClientName(opts.clientName)
  const parsed = parseStoreUrl(url ?? 'memory://')
  const load = factoryFor(parsed.scheme)
  if (!load) {
    throw invalidArgument(`unknown store URL scheme "${parsed.scheme}://" in ${parsed.display}; use one of ${knownSchemes().join(', ')}`)
  }
  checkUrlOptions(parsed, urlOptionsOf(parsed.scheme))
  const clientId = newClientId()
  const factory = await load()
  const driver = await factory(parsed, {
    clientId,
    connectTimeoutMs: parseDuration(opts.connectTimeout ?? '5s', 'connectTimeout'),
    commandTimeoutMs: parseDuration(opts.commandTimeout ?? '2s', 'commandTimeout'),
    fenceTtlMs: parseUrlDuration(parsed.params.get('fenceTtl') ?? DEFAULT_FENCE_TTL, 'fenceTtl (in the store URL)'),
  })
  inspectAs(driver, `${driver.constructor.name} { ${parsed.display} }`)
  return new Baton(driver, clientId, describeProcess(clientName))
}

/** A duration from a URL query: '10m', or bare digits as milliseconds. */
export function parseUrlDuration(value: string, setting: string): number {
  return parseDuration(/^\d+$/.test(value) ? Number(value) : value, setting)
}

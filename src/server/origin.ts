import { isIP } from 'node:net'
import { HttpError } from './http-errors.js'

/**
 * Host and Origin checks, against DNS rebinding and cross-site requests on
 * an open server: a web page can make a browser POST to a server on the
 * visitor's loopback, or rebind its own name to 127.0.0.1 and then read the
 * whole API as "same origin". The server answers only
 * - Host headers naming it: when bound to loopback, the loopback names
 *   (localhost, 127.x.x.x, ::1), plus `allowedHosts`; bound elsewhere, any
 *   Host unless `allowedHosts` lists them (the server can't know its DNS names);
 * - browser requests (those with an Origin header) from its own origin (the
 *   dashboard it serves), plus `allowedOrigins`.
 * Clients that are not browsers send no Origin and pass.
 */
export interface OriginRules {
  /** Extra host names (no port) the server answers to; ['*'] for any. */
  readonly allowedHosts?: readonly string[]
  /** Extra origins (scheme://host[:port]) browsers may call from; ['*'] for any. */
  readonly allowedOrigins?: readonly string[]
}

export type RequestGuard = (host: string | undefined, origin: string | undefined) => void

const LOOPBACK_NAMES = new Set(['localhost', '::1', '[::1]'])

export function isLoopback(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '')
  return LOOPBACK_NAMES.has(name) || name.endsWith('.localhost') || (isIP(name) === 4 && name.startsWith('127.'))
}

/** The host name of a Host header, without its port, lower case; brackets kept for IPv6. */
export function hostnameOf(host: string): string {
  const lower = host.trim().toLowerCase()
  if (lower.startsWith('[')) return lower.slice(0, lower.indexOf(']') + 1)
  const colon = lower.indexOf(':')
  return (colon < 0 ? lower : lower.slice(0, colon)).replace(/\.$/, '')
}

/** The guard for a server bound to `boundHost`; undefined when nothing is checked. */
export function requestGuard(boundHost: string, rules: OriginRules = {}): RequestGuard {
  const extraHosts = new Set((rules.allowedHosts ?? []).map((h) => hostnameOf(h)))
  const anyHost = extraHosts.has('*') || (!isLoopback(boundHost) && extraHosts.size === 0)
  const origins = new Set((rules.allowedOrigins ?? []).map((o) => o.toLowerCase().replace(/\/$/, '')))
  const anyOrigin = origins.has('*')
  return (host, origin) => {
    if (!anyHost && host !== undefined) {
      const name = hostnameOf(host)
      if (!isLoopback(name) && !extraHosts.has(name)) {
        throw new HttpError('FORBIDDEN', `this server does not answer to the host "${name}" (a DNS-rebinding guard); add it with --allowed-hosts`)
      }
    }
    if (origin !== undefined && !anyOrigin) {
      const from = origin.toLowerCase()
      const own = host !== undefined && (from === `http://${host.toLowerCase()}` || from === `https://${host.toLowerCase()}`)
      if (!own && !origins.has(from)) {
        throw new HttpError('FORBIDDEN', `browser requests from ${origin} are refused (only the server's own dashboard may call it); add the origin with --allowed-origins`)
      }
    }
  }
}

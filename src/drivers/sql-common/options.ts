import { readFileSync } from 'node:fs'
import type { ConnectionOptions } from 'node:tls'
import { invalidArgument } from '../../core/errors.js'
import type { StoreUrl } from '../../core/url.js'

/**
 * Store URL settings the SQL stores (PostgreSQL, MySQL) read the same way:
 * one host, the pool size, a port given as a setting,
 * and TLS as libpq's sslmode / sslrootcert.
 */

export function checkSingleHost(url: StoreUrl, store: string): void {
  if (url.hosts.length > 1) {
    throw invalidArgument(`${url.display} names ${url.hosts.length} hosts; the ${store} store connects to one (put a proxy or a virtual IP in front of a cluster)`)
  }
}

export function parsePort(url: StoreUrl, defaultPort: number): number {
  const raw = url.params.get('port')
  if (raw === null) return defaultPort
  const port = Number(raw)
  if (!/^\d+$/.test(raw) || port < 1 || port > 65535) throw invalidArgument(`"port" in ${url.display} must be 1-65535, got ${JSON.stringify(raw)}`)
  return port
}

export function parsePoolSize(url: StoreUrl, defaultSize: number): number {
  const raw = url.params.get('poolSize')
  if (raw === null) return defaultSize
  const size = Number(raw)
  if (!/^\d+$/.test(raw) || size < 1 || size > 1000) {
    throw invalidArgument(`"poolSize" in ${url.display} must be a whole number from 1 to 1000, got ${JSON.stringify(raw)}`)
  }
  return size
}

/** libpq's sslmode values, as far as node's TLS can honour them. */
export function sslOptions(url: StoreUrl): false | ConnectionOptions {
  const mode = url.params.get('sslmode') ?? 'disable'
  const ca = readCa(url)
  switch (mode) {
    case 'disable':
      return false
    case 'require': // encrypted, server not verified (as libpq without a root certificate)
      return { rejectUnauthorized: false }
    case 'verify-ca': // signed by a trusted CA, any host name
      return { ...ca, rejectUnauthorized: true, checkServerIdentity: () => undefined }
    case 'verify-full':
      return { ...ca, rejectUnauthorized: true }
    case 'prefer':
    case 'allow':
      throw invalidArgument(`sslmode=${mode} in ${url.display} would fall back to an unencrypted connection, which this client can not do; use sslmode=disable or sslmode=require`)
    default:
      throw invalidArgument(`"sslmode" in ${url.display} must be disable, require, verify-ca or verify-full, got ${JSON.stringify(mode)}`)
  }
}

function readCa(url: StoreUrl): { ca?: Buffer } {
  const path = url.params.get('sslrootcert')
  if (path === null) return {}
  try {
    return { ca: readFileSync(path) }
  } catch (cause) {
    throw invalidArgument(`"sslrootcert" in ${url.display} names a file that can not be read: ${path}`, cause)
  }
}

import { readFileSync } from 'node:fs'
import { Agent } from 'node:https'
import { createSecureContext, rootCertificates } from 'node:tls'
import type { DriverOptions } from '../../core/driver.js'
import { invalidArgument } from '../../core/errors.js'
import type { StoreUrl } from '../../core/url.js'
import { Api } from './api.js'

/** The API of the one baton server the store URL names: its base URL, bearer token and TLS settings. */
export function serverApi(url: StoreUrl, options: DriverOptions): Api {
  const [host] = url.hosts
  if (!host || url.hosts.length > 1) throw invalidArgument(`the store URL ${url.display} must name one baton server: http://[:token@]host:port`)
  const hostPart = host.host.includes(':') ? `[${host.host}]` : host.host
  const base = `${url.scheme}://${hostPart}${host.port ? `:${host.port}` : ''}${url.path ? `/${url.path.replace(/\/$/, '')}` : ''}`
  return new Api(base, url.password || url.username || undefined, options.commandTimeoutMs, tlsAgent(url))
}

/**
 * `https://…?ca=/path/ca.pem` trusts a private CA besides the system's (as
 * `rediss://…?ca=` does); `&cert=/path/client.crt&key=/path/client.key`
 * presents a client certificate (a server started with --tls-ca asks for
 * one). Undefined when none is given: the built-in fetch and the system's CAs.
 */
function tlsAgent(url: StoreUrl): Agent | undefined {
  const [ca, cert, key] = (['ca', 'cert', 'key'] as const).map((name) => url.params.get(name) ?? undefined)
  if (ca === undefined && cert === undefined && key === undefined) return undefined
  if (url.scheme !== 'https') throw invalidArgument(`${url.display}: "ca", "cert" and "key" are TLS settings, for an https:// URL`)
  if ((cert === undefined) !== (key === undefined)) throw invalidArgument(`${url.display}: "cert" and "key" go together (a client certificate and its private key)`)
  const read = (name: string, path: string) => {
    try {
      return readFileSync(path)
    } catch (cause) {
      throw invalidArgument(`"${name}" in ${url.display} names a file that can not be read: ${path}`, cause)
    }
  }
  const settings = {
    ...(ca !== undefined ? { ca: [...rootCertificates, read('ca', ca).toString('utf8')] } : {}),
    ...(cert !== undefined && key !== undefined ? { cert: read('cert', cert), key: read('key', key) } : {}),
  }
  try {
    createSecureContext(settings)
  } catch (cause) {
    throw invalidArgument(`${url.display}: the files of "ca", "cert", "key" do not make a TLS context: ${(cause as Error).message}`, cause)
  }
  return new Agent({ keepAlive: true, ...settings })
}

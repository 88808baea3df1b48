import { invalidArgument } from './errors.js'

/**
 * A store URL, parsed by hand because several stores take a list of hosts
 * (`redis+cluster://h1:p,h2:p`), which WHATWG URL cannot represent.
 */
export interface StoreUrl {
  /** 'redis+cluster', without ':' */
  readonly scheme: string
  readonly username?: string
  readonly password?: string
  readonly hosts: readonly { readonly host: string; readonly port?: number }[]
  /** Path without the leading '/', decoded ('' when absent). */
  readonly path: string
  readonly params: URLSearchParams
  /** The URL with its password masked, for messages. */
  readonly display: string
}

const SHAPE = /^([a-z][a-z0-9+.-]*):\/\/(?:([^@/?#]*)@)?([^/?#]*)(?:\/([^?#]*))?(?:\?([^#]*))?$/i

export function parseStoreUrl(raw: unknown): StoreUrl {
  if (typeof raw !== 'string' && !(raw instanceof URL)) {
    throw invalidArgument(`the store URL must be a string, got ${typeof raw}`)
  }
  const text = String(raw).trim()
  const match = SHAPE.exec(text)
  if (!match) {
    throw invalidArgument(`the store URL ${JSON.stringify(mask(text))} is not of the form scheme://[user:pass@]host:port[/path]; e.g. memory:// or redis://127.0.0.1:6379`)
  }
  const [, scheme, auth, hostList, path, query] = match
  let username: string | undefined
  let password: string | undefined
  if (auth !== undefined) {
    const colon = auth.indexOf(':')
    username = decode(colon < 0 ? auth : auth.slice(0, colon)) || undefined
    password = colon < 0 ? undefined : decode(auth.slice(colon + 1))
  }
  const hosts = hostList ? hostList.split(',').map((entry) => parseHost(entry, text)) : []
  return {
    scheme: scheme!.toLowerCase(),
    ...(username !== undefined ? { username } : {}),
    ...(password !== undefined ? { password } : {}),
    hosts,
    path: path ? decode(path) : '',
    params: new URLSearchParams(query ?? ''),
    display: mask(text),
  }
}

function parseHost(entry: string, url: string): { host: string; port?: number } {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry)
  const plain = /^([^:[\]]+)(?::(\d+))?$/.exec(entry)
  const found = bracketed ?? plain
  if (!found) throw invalidArgument(`the host ${JSON.stringify(entry)} in the store URL ${mask(url)} is not host or host:port`)
  const port = found[2] === undefined ? undefined : Number(found[2])
  if (port !== undefined && (port < 1 || port > 65535)) {
    throw invalidArgument(`the port ${port} in the store URL ${mask(url)} is out of range 1-65535`)
  }
  return port === undefined ? { host: found[1]! } : { host: found[1]!, port }
}

function decode(part: string): string {
  try {
    return decodeURIComponent(part)
  } catch (cause) {
    throw invalidArgument(`the store URL has a badly escaped part ${JSON.stringify(part)}`, cause)
  }
}

function mask(url: string): string {
  return url.replace(/^([^:]+:\/\/[^:@/]*:)[^@/]*@/, '$1***@')
}

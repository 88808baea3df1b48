import { inspect } from 'node:util'
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
  /** The URL with every credential masked, for messages. */
  readonly display: string
}

const SCHEME = /^([a-z][a-z0-9+.-]*):\/\//i
const AFTER_AUTH = /^([^/?#]*)(?:\/([^?#]*))?(?:\?([^#]*))?$/
/** Query parameters whose values are secrets, masked like a password. */
const SECRET_PARAMS = /^(?:password|pass|pwd|secret|token|auth|key|sslpassword)$/i

export function parseStoreUrl(raw: unknown): StoreUrl {
  if (typeof raw !== 'string' && !(raw instanceof URL)) {
    throw invalidArgument(`the store URL must be a string, got ${typeof raw}`)
  }
  const text = String(raw).trim()
  const display = maskUrl(text)
  const scheme = SCHEME.exec(text)
  const { auth, rest } = splitAuth(text)
  const match = scheme && AFTER_AUTH.exec(rest)
  if (!scheme || !match) {
    throw invalidArgument(`the store URL ${JSON.stringify(display)} is not of the form scheme://[user:pass@]host:port[/path]; e.g. memory:// or redis://127.0.0.1:6379`)
  }
  const [, hostList, path, query] = match
  let username: string | undefined
  let password: string | undefined
  if (auth !== undefined) {
    const colon = auth.indexOf(':')
    username = decode(colon < 0 ? auth : auth.slice(0, colon), 'user name', display) || undefined
    password = colon < 0 ? undefined : decode(auth.slice(colon + 1), 'password', display)
  }
  const hosts = hostList ? hostList.split(',').map((entry) => parseHost(entry, display)) : []
  return {
    scheme: scheme[1]!.toLowerCase(),
    ...(username !== undefined ? { username } : {}),
    ...(password !== undefined ? { password } : {}),
    hosts,
    path: path ? decode(path, 'path', display) : '',
    params: new URLSearchParams(query ?? ''),
    display,
  }
}

/**
 * The user info ends at the LAST '@' before the query: passwords pasted
 * unescaped often contain '@' or '/', and must neither break parsing nor end
 * up in a message as a "host" or a "path".
 */
function splitAuth(text: string): { auth?: string; rest: string } {
  const start = SCHEME.exec(text)?.[0].length ?? 0
  const queryAt = text.search(/[?#]/)
  const beforeQuery = queryAt < 0 ? text : text.slice(0, queryAt)
  let at = beforeQuery.lastIndexOf('@')
  // A '?' or '#' pasted unescaped in a password ends "before the query"
  // early: then the last '@' followed by a host list ends the user info,
  // unless a '/' comes before that '?' or '#' (then it is a path's query).
  if (at < start) at = authEndPastQueryChar(text, start)
  if (at < start) return { rest: text.slice(start) }
  return { auth: text.slice(start, at), rest: text.slice(at + 1) }
}

const HOST_LIST = /^[\w.\-:[\],%]+(?:[/?]|$)/

function authEndPastQueryChar(text: string, start: number): number {
  const at = text.lastIndexOf('@')
  if (at <= start) return -1
  const userInfo = text.slice(start, at)
  const slash = userInfo.indexOf('/')
  const queryChar = userInfo.search(/[?#]/)
  return (slash < 0 || queryChar < slash) && HOST_LIST.test(text.slice(at + 1)) ? at : -1
}

function parseHost(entry: string, display: string): { host: string; port?: number } {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry)
  const plain = /^([^:[\]]+)(?::(\d+))?$/.exec(entry)
  const found = bracketed ?? plain
  if (!found) throw invalidArgument(`the host ${JSON.stringify(entry)} in the store URL ${display} is not host or host:port`)
  const port = found[2] === undefined ? undefined : Number(found[2])
  if (port !== undefined && (port < 1 || port > 65535)) {
    throw invalidArgument(`the port ${port} in the store URL ${display} is out of range 1-65535`)
  }
  return port === undefined ? { host: found[1]! } : { host: found[1]!, port }
}

/** Decodes one part; the message names the part, never its text (it may be a password). */
function decode(part: string, what: string, display: string): string {
  try {
    return decodeURIComponent(part)
  } catch (cause) {
    throw invalidArgument(`the ${what} in the store URL ${display} is badly %-escaped`, cause)
  }
}

/**
 * The URL as messages may show it: the password (and a lone user info, which
 * several clients read as a password: `redis://s3cret@host`) becomes "***",
 * as do secret-looking query parameters. Works on any text, parseable or not.
 * Secrecy first: everything up to the LAST '@' is user info here, whatever
 * the parser made of it (a password may hold '@', '/', '#' and '?' unescaped).
 */
export function maskUrl(text: string): string {
  const scheme = SCHEME.exec(text)?.[0] ?? ''
  const lastAt = text.lastIndexOf('@')
  const auth = lastAt >= scheme.length ? text.slice(scheme.length, lastAt) : undefined
  const rest = auth === undefined ? text.slice(scheme.length) : text.slice(lastAt + 1)
  let masked = rest
  const queryAt = rest.indexOf('?')
  if (queryAt >= 0) {
    const params = rest.slice(queryAt + 1).split('&').map((pair) => {
      const eq = pair.indexOf('=')
      return eq > 0 && SECRET_PARAMS.test(pair.slice(0, eq)) ? `${pair.slice(0, eq)}=***` : pair
    })
    masked = `${rest.slice(0, queryAt)}?${params.join('&')}`
  }
  if (auth === undefined) return scheme + masked
  const colon = auth.indexOf(':')
  const user = colon < 0 || /[@/?#]/.test(auth.slice(0, colon)) ? '' : auth.slice(0, colon)
  return `${scheme}${user ? `${user}:` : ''}***@${masked}`
}

/**
 * Makes util.inspect show `target` (a driver, which keeps its store URL and
 * its libraries' settings, passwords included) as `text` only, unless its
 * class already says how it is shown. connect() applies it to every driver,
 * so `util.inspect(client)` and `util.inspect(lease)` are safe whatever the store.
 */
export function inspectAs(target: object, text: string): void {
  if (inspect.custom in target) return
  Object.defineProperty(target, inspect.custom, { value: () => text, enumerable: false })
}

/**
 * Refuses a query option `known` does not list (a typo of a safety setting
 * must never silently give a weaker lock), and one given twice (which of
 * the two counts would be a guess). The message names the option, what the
 * store takes, and the likely spelling of a near miss.
 */
export function checkUrlOptions(url: StoreUrl, known: readonly string[]): void {
  const seen = new Set<string>()
  for (const key of url.params.keys()) {
    if (seen.has(key)) throw invalidArgument(`the option "${key}" is given twice in the store URL ${url.display}`)
    seen.add(key)
    if (known.includes(key)) continue
    const near = nearest(key, known)
    const takes = known.length === 0 ? 'takes no options' : `takes ${known.map((k) => `"${k}"`).join(', ')}`
    throw invalidArgument(
      `unknown option "${key}" in the store URL ${url.display}${near ? `; did you mean "${near}"?` : ''} (${url.scheme}:// ${takes})`,
    )
  }
}

/** The known option `key` most likely misspells: the same but for case, or at most 2 edits away (1 for short names). */
function nearest(key: string, known: readonly string[]): string | undefined {
  const lower = key.trim().toLowerCase()
  const sameButCase = known.find((k) => k.toLowerCase() === lower)
  if (sameButCase) return sameButCase
  let best: string | undefined
  let bestDistance = Infinity
  for (const candidate of known) {
    const distance = editDistance(lower, candidate.toLowerCase())
    if (distance < bestDistance && distance <= (candidate.length <= 4 ? 1 : 2)) [best, bestDistance] = [candidate, distance]
  }
  return best
}

/** Levenshtein distance (option names are short). */
function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const next = [i]
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
    }
    row = next
  }
  return row[b.length]!
}

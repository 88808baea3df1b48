import { parseDuration } from '../../core/duration.js'
import { invalidArgument } from '../../core/errors.js'
import type { StoreUrl } from '../../core/url.js'

/** `redlock://h1:p1,h2:p2,h3:p3[,…]?timeout=50ms&driftFactor=0.01&drift=2&maxTtl=30s&prefix=baton` */
export interface RedlockSettings {
  /** One single-node URL per master, in the order of the store URL. */
  readonly nodes: readonly StoreUrl[]
  /** Per-node timeout of one request (`?timeout=`, default 50 ms): a node slower than that does not vote. */
  readonly timeoutMs: number
  /** Clock drift allowance: ttl × driftFactor + driftMs (`?driftFactor=`, default 0.01; `?drift=`, default 2 ms). */
  readonly driftFactor: number
  readonly driftMs: number
  /** The largest ttl any client uses (`?maxTtl=`, default 0): the restart guard's window for restarts seen at first contact. */
  readonly maxTtlMs: number
  readonly keyPrefix: string
}

const DEFAULT_PORT = 6379

export function parseRedlockUrl(url: StoreUrl): RedlockSettings {
  if (url.hosts.length < 3) {
    throw invalidArgument(`${url.display} names ${url.hosts.length} node(s); Redlock needs at least 3 independent Redis masters (redlock://h1:p1,h2:p2,h3:p3); for one Redis use redis://`)
  }
  if (url.path !== '') throw invalidArgument(`${url.display} has a path "/${url.path}"; redlock:// takes none (every node uses database 0)`)
  const seen = new Set<string>()
  const nodes = url.hosts.map((h): StoreUrl => {
    const address = `${h.host.includes(':') ? `[${h.host}]` : h.host}:${h.port ?? DEFAULT_PORT}`
    if (seen.has(address)) throw invalidArgument(`${url.display} names the node ${address} twice; a majority must be of distinct masters`)
    seen.add(address)
    const prefix = url.params.get('prefix')
    return {
      scheme: 'redis',
      ...(url.username !== undefined ? { username: url.username } : {}),
      ...(url.password !== undefined ? { password: url.password } : {}),
      hosts: [h],
      path: '',
      params: new URLSearchParams(prefix === null ? {} : { prefix }),
      display: address,
    }
  })
  const number = (key: string, fallback: number, max: number): number => {
    const raw = url.params.get(key)
    if (raw === null) return fallback
    const value = Number(raw)
    if (raw.trim() === '' || !Number.isFinite(value) || value < 0 || value > max) {
      throw invalidArgument(`"${key}" in ${url.display} must be a number from 0 to ${max}, got ${JSON.stringify(raw)}`)
    }
    return value
  }
  const duration = (key: string, fallback: number, allowZero: boolean): number => {
    const raw = url.params.get(key)
    if (raw === null) return fallback
    return parseDuration(/^\d+$/.test(raw) ? Number(raw) : raw, `${key} (in the store URL)`, { allowZero })
  }
  return {
    nodes,
    timeoutMs: duration('timeout', 50, false),
    driftFactor: number('driftFactor', 0.01, 0.5),
    driftMs: number('drift', 2, 60_000),
    maxTtlMs: duration('maxTtl', 0, true),
    keyPrefix: url.params.get('prefix') ?? 'baton',
  }
}

/** N standalone redis-servers as the masters of one redlock:// store. */
import { startRedis, type RedisServer } from './servers.js'

export interface RedlockSetup {
  /** 'redlock://127.0.0.1:P1,127.0.0.1:P2,...' (plus `query` when given) */
  readonly url: string
  readonly nodes: RedisServer[]
  /** The store URL over other ports (e.g. proxies in front of some nodes). */
  urlFor(ports: readonly number[], query?: string): string
  stop(): Promise<void>
}

export async function startRedlock(count: number, query = ''): Promise<RedlockSetup> {
  const nodes = await Promise.all(Array.from({ length: count }, () => startRedis()))
  const urlFor = (ports: readonly number[], q = query): string =>
    `redlock://${ports.map((p) => `127.0.0.1:${p}`).join(',')}${q ? `?${q}` : ''}`
  return {
    url: urlFor(nodes.map((n) => n.port)),
    nodes,
    urlFor,
    stop: async () => {
      await Promise.all(nodes.map((n) => n.stop()))
    },
  }
}

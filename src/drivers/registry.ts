import type { DriverFactory } from '../core/driver.js'

/**
 * URL scheme → driver factory, loaded on first use so an application never
 * loads a client library for a store it does not use.
 */
const FACTORIES: Record<string, () => Promise<DriverFactory>> = {
  'memory': async () => (await import('./memory/index.js')).createMemoryDriver,
  'redis': async () => (await import('./redis/index.js')).createRedisDriver,
  'rediss': async () => (await import('./redis/index.js')).createRedisDriver,
  'redis+sentinel': async () => (await import('./redis/index.js')).createRedisDriver,
  'redis+cluster': async () => (await import('./redis/index.js')).createRedisDriver,
  'postgres': async () => (await import('./postgres/index.js')).createPostgresDriver,
  'postgresql': async () => (await import('./postgres/index.js')).createPostgresDriver,
  'etcd': async () => (await import('./etcd/index.js')).createEtcdDriver,
  'etcds': async () => (await import('./etcd/index.js')).createEtcdDriver,
  'zk': async () => (await import('./zookeeper/index.js')).createZkDriver,
  'http': async () => (await import('./http/index.js')).createHttpDriver,
  'https': async () => (await import('./http/index.js')).createHttpDriver,
  'redlock': async () => (await import('./redlock/index.js')).createRedlockDriver,
}

export const knownSchemes = (): string[] => Object.keys(FACTORIES).map((s) => `${s}://`)

export function factoryFor(scheme: string): (() => Promise<DriverFactory>) | undefined {
  return Object.hasOwn(FACTORIES, scheme) ? FACTORIES[scheme] : undefined
}

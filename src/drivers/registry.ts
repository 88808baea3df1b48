import type { DriverFactory } from '../core/driver.js'
import { invalidArgument } from '../core/errors.js'

interface Store {
  load: () => Promise<DriverFactory>
  /**
   * The client packages its driver imports: optional peer dependencies of
   * baton (package.json), installed by the application that uses the store.
   */
  clients: readonly string[]
}

const REDIS: Store = { load: async () => (await import('./redis/index.js')).createRedisDriver, clients: ['ioredis'] }
const POSTGRES: Store = { load: async () => (await import('./postgres/index.js')).createPostgresDriver, clients: ['pg'] }
const MYSQL: Store = { load: async () => (await import('./mysql/index.js')).createMysqlDriver, clients: ['mysql2'] }
const ETCD: Store = { load: async () => (await import('./etcd/index.js')).createEtcdDriver, clients: ['etcd3', 'cockatiel'] }
const HTTP: Store = { load: async () => (await import('./http/index.js')).createHttpDriver, clients: [] }

/**
 * URL scheme → driver, loaded on first use so an application never loads
 * (nor needs to install) a client library for a store it does not use.
 */
const STORES: Record<string, Store> = {
  'memory': { load: async () => (await import('./memory/index.js')).createMemoryDriver, clients: [] },
  'redis': REDIS,
  'rediss': REDIS,
  'redis+sentinel': REDIS,
  'redis+cluster': REDIS,
  'postgres': POSTGRES,
  'postgresql': POSTGRES,
  'mysql': MYSQL,
  'mariadb': MYSQL,
  'etcd': ETCD,
  'etcds': ETCD,
  'zk': { load: async () => (await import('./zookeeper/index.js')).createZkDriver, clients: ['node-zookeeper-client'] },
  'http': HTTP,
  'https': HTTP,
  'redlock': { load: async () => (await import('./redlock/index.js')).createRedlockDriver, clients: ['ioredis'] },
}

export const knownSchemes = (): string[] => Object.keys(STORES).map((s) => `${s}://`)

/**
 * The package a failed import could not find, from Node's ES module loader
 * (`Cannot find package 'pg' imported from …`) or its require() (the `baton`
 * bundle: `Cannot find module 'pg'`).
 */
function missingPackage(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return undefined
  const specifier = /Cannot find (?:package|module) '([^']+)'/.exec((error as Error).message)?.[1]
  return specifier?.match(/^(?:@[^/]+\/)?[^/]+/)?.[0]
}

/** Loads the driver for `scheme`; a missing client package is the application's to install, so it is an INVALID_ARGUMENT that says how. */
export function factoryFor(scheme: string): (() => Promise<DriverFactory>) | undefined {
  if (!Object.hasOwn(STORES, scheme)) return undefined
  const store = STORES[scheme]!
  return async () => {
    try {
      return await store.load()
    } catch (error) {
      const missing = missingPackage(error)
      if (missing === undefined || !store.clients.includes(missing)) throw error
      throw invalidArgument(`${scheme}:// stores need the package "${missing}", which is not installed; install it beside baton: npm install ${missing}`, error)
    }
  }
}

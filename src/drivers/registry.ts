import type { DriverFactory } from '../core/driver.js'
import { invalidArgument } from '../core/errors.js'

interface Store {
  load: () => Promise<DriverFactory>
  /**
   * The client packages its driver imports: optional peer dependencies of
   * baton (package.json), installed by the application that uses the store.
   */
  clients: readonly string[]
  /**
   * The query options its URLs take (`?prefix=…`): connect() refuses any
   * other, so a misspelt safety setting never silently gives a weaker lock.
   */
  options: readonly string[]
}

const REDIS: Store = { load: async () => (await import('./redis/index.js')).createRedisDriver, clients: ['ioredis'], options: ['prefix', 'fenceTtl'] }
const POSTGRES: Store = {
  load: async () => (await import('./postgres/index.js')).createPostgresDriver,
  clients: ['pg'],
  options: ['schema', 'sslmode', 'sslrootcert', 'host', 'port', 'poolSize', 'fenceTtl'],
}
const MYSQL: Store = {
  load: async () => (await import('./mysql/index.js')).createMysqlDriver,
  clients: ['mysql2'],
  options: ['sslmode', 'sslrootcert', 'socket', 'port', 'poolSize', 'fenceTtl'],
}
const ETCD: Store = { load: async () => (await import('./etcd/index.js')).createEtcdDriver, clients: ['etcd3', 'cockatiel'], options: ['prefix', 'fenceTtl'] }
const HTTP: Store = { load: async () => (await import('./http/index.js')).createHttpDriver, clients: [], options: ['session'] }
/** The same store over TLS: its options and `ca` (a private CA's file). */
const withCa = (store: Store): Store => ({ ...store, options: [...store.options, 'ca'] })

/**
 * URL scheme → driver, loaded on first use so an application never loads
 * (nor needs to install) a client library for a store it does not use.
 */
const STORES: Record<string, Store> = {
  'memory': { load: async () => (await import('./memory/index.js')).createMemoryDriver, clients: [], options: ['fenceTtl'] },
  'redis': REDIS,
  'rediss': withCa(REDIS),
  'redis+sentinel': REDIS,
  'redis+cluster': REDIS,
  'postgres': POSTGRES,
  'postgresql': POSTGRES,
  'mysql': MYSQL,
  'mariadb': MYSQL,
  'etcd': ETCD,
  'etcds': withCa(ETCD),
  'zk': { load: async () => (await import('./zookeeper/index.js')).createZkDriver, clients: ['node-zookeeper-client'], options: ['fenceTtl'] },
  'http': HTTP,
  // A private CA, and a client certificate for a server started with --tls-ca.
  'https': { ...withCa(HTTP), options: [...HTTP.options, 'ca', 'cert', 'key'] },
  'redlock': {
    load: async () => (await import('./redlock/index.js')).createRedlockDriver,
    clients: ['ioredis'],
    options: ['timeout', 'driftFactor', 'drift', 'maxTtl', 'prefix', 'fenceTtl'],
  },
}

export const knownSchemes = (): string[] => Object.keys(STORES).map((s) => `${s}://`)

/** The query options `scheme`'s URLs take (empty for an unknown scheme). */
export const urlOptionsOf = (scheme: string): readonly string[] => (Object.hasOwn(STORES, scheme) ? STORES[scheme]!.options : [])

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

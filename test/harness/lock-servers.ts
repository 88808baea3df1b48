/**
 * Lock servers in this process (createLockServer), each with its own client
 * of one store, on free loopback ports: for tests of servers sharing a store.
 */
import { connect, type Baton } from '../../src/index.js'
import { createLockServer, type LockServer, type LockServerOptions } from '../../src/server/index.js'

export interface SharedServers {
  readonly servers: { server: LockServer; baton: Baton; base: string }[]
  /** Starts one more on the store; returns its base URL. */
  add(): Promise<string>
  close(): Promise<void>
}

export function serversOn(url: () => string, options: Omit<LockServerOptions, 'baton'> = {}): SharedServers {
  const servers: SharedServers['servers'] = []
  return {
    servers,
    async add() {
      const baton = await connect(url())
      const server = await createLockServer({ ...options, baton })
      const base = (await server.listen('127.0.0.1', 0)).replace('localhost', '127.0.0.1')
      servers.push({ server, baton, base })
      return base
    },
    async close() {
      for (const { server, baton } of servers.splice(0)) {
        await server.close().catch(() => {})
        await baton.close().catch(() => {})
      }
    },
  }
}

/**
 * A straightforward ZooKeeper lock recipe on the same client library as
 * baton's driver (node-zookeeper-client), as in ZooKeeper's recipe docs:
 * EPHEMERAL_SEQUENTIAL node, lowest sequence holds, others watch their
 * predecessor and list the children again when it goes.
 */
import zookeeper, { type Client } from 'node-zookeeper-client'
import type { Contender, PeerDef, PeerOptions } from './types.js'

function call<T>(send: (done: (error: unknown, value?: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => send((error, value) => (error ? reject(error) : resolve(value as T))))
}

export const zkRecipe: PeerDef = {
  id: 'zk-recipe',
  store: 'zookeeper',
  label: () => 'ZooKeeper recipe (same client)',
  async create(options: PeerOptions): Promise<Contender> {
    const client: Client = zookeeper.createClient(options.url.replace(/^zk:\/\//, ''), { sessionTimeout: Math.max(4000, options.ttlMs) })
    await new Promise<void>((resolve) => {
      client.once('connected', () => resolve())
      client.connect()
    })
    const parents = new Set<string>()
    const parentOf = async (key: string): Promise<string> => {
      const parent = `/bench-recipe/${encodeURIComponent(key)}`
      if (!parents.has(parent)) {
        await call<string>((done) => client.mkdirp(parent, (e, p) => done(e, p)))
        parents.add(parent)
      }
      return parent
    }
    return {
      label: 'ZooKeeper recipe (same client)',
      async acquire(key) {
        const parent = await parentOf(key)
        const path = await call<string>((done) => client.create(`${parent}/lock-`, Buffer.alloc(0), zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL, (e, p) => done(e, p)))
        const mine = path.slice(parent.length + 1)
        for (;;) {
          const children = (await call<string[]>((done) => client.getChildren(parent, (e, c) => done(e, c)))).sort()
          const index = children.indexOf(mine)
          if (index === 0) break
          const predecessor = `${parent}/${children[index - 1]}`
          const gone = new Promise<void>((resolve) => {
            client.exists(predecessor, () => resolve(), (error, stat) => {
              if (error || !stat) resolve()
            })
          })
          await gone
        }
        return () => call<void>((done) => client.remove(path, -1, (e) => done(e)))
      },
      async close() {
        client.close()
      },
    }
  },
}

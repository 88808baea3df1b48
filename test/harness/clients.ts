import { connect, type Baton } from '../../src/index.js'
import { startProxy, type Proxy } from './proxy.js'
import { ms } from './timing.js'

type ConnectOptions = NonNullable<Parameters<typeof connect>[1]>

/**
 * connect() options for a client whose test is not about the library's own
 * deadlines: the default 2 s commandTimeout is a verdict on how busy the
 * machine is (100 parallel acquires on a loaded box can take longer), so such
 * clients get deadlines they only reach when something is really wrong. A test
 * about deadlines passes its own, which win.
 */
export function unhurried(options: ConnectOptions = {}): ConnectOptions {
  return { connectTimeout: ms(30000), commandTimeout: ms(30000), ...options }
}

/** Clients a test file connects, all closed together in its `after`. */
export function clientPool(): {
  client(url: string, options?: Parameters<typeof connect>[1]): Promise<Baton>
  closeAll(): Promise<void>
} {
  const clients: Baton[] = []
  return {
    async client(url, options = {}) {
      const baton = await connect(url, options)
      clients.push(baton)
      return baton
    },
    async closeAll() {
      await Promise.allSettled(clients.map((c) => c.close()))
    },
  }
}

/** A client of `scheme://` whose one connection goes through a fresh TCP proxy in front of `port`. */
export async function throughProxy(
  client: (url: string, options?: Parameters<typeof connect>[1]) => Promise<Baton>,
  scheme: string, port: number, options: Parameters<typeof connect>[1] = {},
): Promise<{ baton: Baton; proxy: Proxy }> {
  const proxy = await startProxy(port)
  return { baton: await client(`${scheme}://127.0.0.1:${proxy.port}`, options), proxy }
}

import { Redis } from 'ioredis'

/** A plain ioredis connection for a peer, with ioredis' defaults. */
export async function openRedis(url: string): Promise<Redis> {
  const client = new Redis(url, { lazyConnect: true })
  client.on('error', () => {}) // failures surface through the commands
  await client.connect()
  return client
}

export async function closeRedis(client: Redis): Promise<void> {
  try {
    await client.quit()
  } catch {
    // already closed
  }
  client.disconnect()
}

/** The Redis nodes of a URL: each host of a redlock:// URL, or the one redis:// URL. */
export function nodeUrls(url: string): string[] {
  const multi = /^redlock:\/\/([^/?#]+)/.exec(url)
  return multi ? multi[1]!.split(',').map((host) => `redis://${host}`) : [url]
}

/** One plain ioredis connection per node of `url` (see nodeUrls). */
export function openNodes(url: string): Promise<Redis[]> {
  return Promise.all(nodeUrls(url).map(openRedis))
}

export async function closeNodes(clients: readonly Redis[]): Promise<void> {
  await Promise.all(clients.map(closeRedis))
}

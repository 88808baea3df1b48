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

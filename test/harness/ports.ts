import { createServer, type AddressInfo } from 'node:net';

/** The ports a test server may be given: never a privileged one, never out of range. */
export const LOWEST_PORT = 1024;
export const HIGHEST_PORT = 65535;

/**
 * Every port this process handed out, oldest first, so it never hands out
 * one twice. The kernel picks a port for `listen(0)` at random among the
 * free ones, and a port closed a moment ago is free again: two calls could
 * give the same port, and a server started with both (ZooKeeper's client,
 * quorum and election ports, a Redis Cluster bus port) refuses its config.
 * Bounded well below the kernel's ephemeral range (~28,000 ports), so a
 * picker never runs out.
 */
const handedOut = new Set<number>();
const REMEMBERED = 4096;
const MAX_TRIES = 100;

function listenOnce(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: 0, exclusive: true }, () => {
      const { port } = server.address() as AddressInfo;
      server.close((err) => (err ? reject(err) : resolve(port)));
    });
  });
}

/**
 * Ask the kernel for a currently free loopback TCP port, one this process
 * has not handed out before.
 *
 * There is an unavoidable race between closing our listener and the caller
 * binding the port (another process may take it), so callers that spawn
 * servers should retry on "Address already in use" (servers.ts does).
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < MAX_TRIES; attempt++) {
    const port = await listenOnce();
    if (port < LOWEST_PORT || port > HIGHEST_PORT || handedOut.has(port)) continue;
    handedOut.add(port);
    if (handedOut.size > REMEMBERED) handedOut.delete(handedOut.values().next().value as number);
    return port;
  }
  throw new Error(`no free loopback port this process has not handed out already, after ${MAX_TRIES} tries`);
}

/** `count` free ports, distinct and in range (for a server that binds several). */
export async function freePorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  for (let i = 0; i < count; i++) ports.push(await freePort());
  checkPorts(ports);
  return ports;
}

/** Throws unless the ports are distinct and each in range: what a server's config needs. */
export function checkPorts(ports: readonly number[]): void {
  for (const port of ports) {
    if (!Number.isInteger(port) || port < LOWEST_PORT || port > HIGHEST_PORT) throw new Error(`port ${port} is out of range ${LOWEST_PORT}-${HIGHEST_PORT}`);
  }
  if (new Set(ports).size !== ports.length) throw new Error(`ports collide: ${ports.join(', ')}`);
}

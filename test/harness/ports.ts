import { createServer, type AddressInfo } from 'node:net';

/**
 * Ask the kernel for a currently free loopback TCP port.
 *
 * There is an unavoidable race between closing our listener and the caller
 * binding the port, so callers that spawn servers should retry on
 * "Address already in use" (servers.ts does).
 */
export function freePort(): Promise<number> {
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

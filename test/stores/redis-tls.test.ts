/**
 * The conformance suite over TLS (rediss://), against a redis-server with a
 * certificate from a throwaway CA made here with openssl.
 */
import { join } from 'node:path'
import { runConformance } from '../conformance/index.js'
import { freePort } from '../harness/ports.js'
import { startRedis } from '../harness/servers.js'
import { makeCertificates } from '../harness/tls.js'

runConformance('rediss:// (TLS)', async () => {
  const { dir, ca } = await makeCertificates()
  const tlsPort = await freePort()
  const server = await startRedis({
    args: [
      '--tls-port', String(tlsPort),
      '--tls-cert-file', join(dir, 'server.crt'), '--tls-key-file', join(dir, 'server.key'),
      '--tls-ca-cert-file', ca, '--tls-auth-clients', 'no',
    ],
  })
  return {
    url: `rediss://127.0.0.1:${tlsPort}?ca=${encodeURIComponent(ca)}`,
    crossProcess: true,
    pause: () => server.pause(),
    resume: () => server.resume(),
    close: () => server.stop(),
  }
})

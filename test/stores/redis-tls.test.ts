/**
 * The conformance suite over TLS (rediss://), against a redis-server with a
 * certificate from a throwaway CA made here with openssl.
 */
import { runConformance } from '../conformance/index.js'
import { startTlsRedis } from '../harness/tls.js'

runConformance('rediss:// (TLS)', async () => {
  const { server, url } = await startTlsRedis()
  return {
    url,
    crossProcess: true,
    pause: () => server.pause(),
    resume: () => server.resume(),
    close: () => server.stop(),
  }
})

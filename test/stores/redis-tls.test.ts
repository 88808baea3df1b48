/**
 * The conformance suite over TLS (rediss://), against a redis-server with a
 * certificate from a throwaway CA made here with openssl.
 */
import { execFile } from 'node:child_process'
import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { runConformance } from '../conformance/index.js'
import { ensureCommand } from '../harness/install.js'
import { freePort } from '../harness/ports.js'
import { startRedis } from '../harness/servers.js'

const run = promisify(execFile)

async function makeCertificates(): Promise<{ dir: string; ca: string }> {
  await ensureCommand('openssl', 'openssl')
  const dir = await mkdtemp(join(tmpdir(), 'baton-tls-'))
  const at = (file: string) => join(dir, file)
  await writeFile(at('san.cnf'), 'subjectAltName=IP:127.0.0.1\n')
  await run('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=baton test CA', '-keyout', at('ca.key'), '-out', at('ca.crt')])
  await run('openssl', ['req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1', '-keyout', at('server.key'), '-out', at('server.csr')])
  await run('openssl', ['x509', '-req', '-days', '1', '-in', at('server.csr'), '-CA', at('ca.crt'), '-CAkey', at('ca.key'), '-CAcreateserial', '-extfile', at('san.cnf'), '-out', at('server.crt')])
  return { dir, ca: at('ca.crt') }
}

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

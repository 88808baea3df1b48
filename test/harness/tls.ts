/** A throwaway certificate authority and a server certificate for 127.0.0.1, made with openssl. */
import { execFile } from 'node:child_process'
import { mkdtemp, rename, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { ensureCommand } from './install.js'
import { freePort } from './ports.js'
import { startRedis, type RedisServer } from './servers.js'

const run = promisify(execFile)

export interface TestCertificates {
  readonly dir: string
  /** The CA certificate clients trust. */
  readonly ca: string
  readonly serverCert: string
  readonly serverKey: string
}

export async function makeCertificates(): Promise<TestCertificates> {
  await ensureCommand('openssl', 'openssl')
  const dir = await mkdtemp(join(tmpdir(), 'baton-tls-'))
  const at = (file: string) => join(dir, file)
  await writeFile(at('san.cnf'), 'subjectAltName=IP:127.0.0.1\n')
  await run('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=baton test CA', '-keyout', at('ca.key'), '-out', at('ca.crt')])
  await run('openssl', ['req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1', '-keyout', at('server.key'), '-out', at('server.csr')])
  await run('openssl', ['x509', '-req', '-days', '1', '-in', at('server.csr'), '-CA', at('ca.crt'), '-CAkey', at('ca.key'), '-CAcreateserial', '-extfile', at('san.cnf'), '-out', at('server.crt')])
  return { dir, ca: at('ca.crt'), serverCert: at('server.crt'), serverKey: at('server.key') }
}

/**
 * A certificate signed by the CA of `certificates`, written to `<name>.crt`
 * and `<name>.key` in its directory (over any earlier files of that name, as
 * a rotation does): for 127.0.0.1 (a server's) or a client's. Each has its
 * own serial (the CA's serial file counts up).
 */
export async function issueCertificate(certificates: TestCertificates, name: string, role: 'server' | 'client' = 'server'): Promise<{ cert: string; key: string }> {
  const at = (file: string) => join(certificates.dir, file)
  const extensions = at(`${name}.cnf`)
  await writeFile(extensions, role === 'server' ? 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' : 'extendedKeyUsage=clientAuth\n')
  await run('openssl', ['req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${role === 'server' ? '127.0.0.1' : name}`, '-keyout', at(`${name}.key.new`), '-out', at(`${name}.csr`)])
  await run('openssl', ['x509', '-req', '-days', '1', '-in', at(`${name}.csr`), '-CA', certificates.ca, '-CAkey', at('ca.key'), '-CAcreateserial', '-extfile', extensions, '-out', at(`${name}.crt.new`)])
  // Replaced by rename, as certificate tools do: a reader never sees half a file.
  await rename(at(`${name}.key.new`), at(`${name}.key`))
  await rename(at(`${name}.crt.new`), at(`${name}.crt`))
  return { cert: at(`${name}.crt`), key: at(`${name}.key`) }
}

/** A redis-server that serves TLS only, with a certificate from a fresh throwaway CA, and the rediss:// URL that trusts it. */
export async function startTlsRedis(): Promise<{ server: RedisServer; url: string; certificates: TestCertificates }> {
  const certificates = await makeCertificates()
  const tlsPort = await freePort()
  const server = await startRedis({
    args: [
      '--tls-port', String(tlsPort),
      '--tls-cert-file', certificates.serverCert, '--tls-key-file', certificates.serverKey,
      '--tls-ca-cert-file', certificates.ca, '--tls-auth-clients', 'no',
    ],
  })
  return { server, url: `rediss://127.0.0.1:${tlsPort}?ca=${encodeURIComponent(certificates.ca)}`, certificates }
}

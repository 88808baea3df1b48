/**
 * The conformance suite over TLS (?sslmode=verify-full with the CA of a
 * throwaway certificate made here), against a private PostgreSQL cluster.
 */
import { runConformance } from '../conformance/index.js'
import { startPostgres } from '../harness/postgres.js'
import { makeCertificates } from '../harness/tls.js'

runConformance('postgres:// (sslmode=verify-full)', async () => {
  const certificates = await makeCertificates()
  const server = await startPostgres({ tls: { cert: certificates.serverCert, key: certificates.serverKey } })
  return {
    url: server.urlFor({ query: `sslmode=verify-full&sslrootcert=${encodeURIComponent(certificates.ca)}` }),
    crossProcess: true,
    pause: () => server.pause(),
    resume: () => server.resume(),
    close: () => server.stop(),
  }
})

/** The conformance suite on a private PostgreSQL cluster started for this file. */
import { runConformance } from '../conformance/index.js'
import { startPostgres } from '../harness/postgres.js'

runConformance('postgres://', async () => {
  const server = await startPostgres()
  return {
    url: server.url,
    crossProcess: true,
    pause: () => server.pause(),
    resume: () => server.resume(),
    close: () => server.stop(),
  }
})

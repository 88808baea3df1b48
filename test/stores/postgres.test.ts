/** The conformance suite on a private PostgreSQL cluster started for this file. */
import { runConformance } from '../conformance/index.js'
import { startPostgres } from '../harness/postgres.js'

runConformance('postgres://', async () => {
  const server = await startPostgres()
  return {
    url: server.url,
    secret: server.password,
    crossProcess: true,
    pause: () => server.pause(),
    resume: () => server.resume(),
    close: () => server.stop(),
    // Immediate shutdown and start: holds are rows, they survive it.
    faults: { ports: [server.port], restart: () => server.restart() },
  }
})

/** The conformance suite, faults included, on a private MariaDB server started for this file. */
import { runConformance } from '../conformance/index.js'
import { startMariadb } from '../harness/mariadb.js'

runConformance('mysql://', async () => {
  const server = await startMariadb()
  return {
    url: server.url,
    secret: server.password,
    crossProcess: true,
    pause: () => server.pause(),
    resume: () => server.resume(),
    close: () => server.stop(),
    // kill -9 and start: holds are InnoDB rows, flushed at every commit, so they survive it.
    faults: { ports: [server.port], restart: () => server.restart() },
  }
})

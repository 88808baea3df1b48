/** The conformance suite on redlock:// over 3 independent redis-servers. */
import { runConformance } from '../conformance/index.js'
import { startRedlock } from '../harness/redlock.js'

runConformance('redlock://', async () => {
  const setup = await startRedlock(3)
  return {
    url: setup.url,
    crossProcess: true,
    // Every master frozen at once is the store frozen.
    pause: () => setup.nodes.forEach((node) => node.pause()),
    resume: () => setup.nodes.forEach((node) => node.resume()),
    close: () => setup.stop(),
  }
})

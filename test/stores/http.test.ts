/** The conformance suite on http://, through a `baton serve` child process on its embedded memory store. */
import { runConformance } from '../conformance/index.js'
import { startBatonServer } from '../harness/baton-server.js'

runConformance('http:// (server on memory)', async () => {
  const server = await startBatonServer()
  return {
    url: server.base,
    crossProcess: true,
    pause: () => server.pause(),
    resume: () => server.resume(),
    close: () => server.stop(),
    faults: {
      ports: [server.port],
      restart: () => server.restart(),
      exceptions: {
        'restart-tokens': 'the memory store keeps its fencing counters in the server process: a restarted server starts them again ' +
          '(capabilities.durableTokens is false); put the server on a durable store when tokens fence anything',
        restart: 'a server on its memory store restarted forgets every hold and can tell nobody: the holder learns at its next renewal (ttl/3)',
      },
    },
  }
})

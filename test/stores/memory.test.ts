/** The conformance suite on the embedded store. */
import { runConformance } from '../conformance/index.js'

runConformance('memory://', async () => ({
  url: 'memory://',
  crossProcess: false,
  close: async () => {},
}))

/** The chaos suite on redlock: see docs/chaos.md. */
import { chaosSuite } from './suite.js'

chaosSuite('redlock', [{ seed: 404, seconds: 14 }])

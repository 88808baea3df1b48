/** The chaos suite on http-memory: see docs/chaos.md. */
import { chaosSuite } from './suite.js'

chaosSuite('http-memory', [{ seed: 808, seconds: 14 }])

/** The chaos suite on redis-sentinel: see docs/chaos.md. */
import { chaosSuite } from './suite.js'

chaosSuite('redis-sentinel', [{ seed: 303, seconds: 14 }])

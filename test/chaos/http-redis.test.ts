/** The chaos suite on http-redis: see docs/chaos.md. */
import { chaosSuite } from './suite.js'

chaosSuite('http-redis', [{ seed: 909, seconds: 14 }])

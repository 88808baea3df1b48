/** The chaos suite on redis: see docs/chaos.md. */
import { chaosSuite } from './suite.js'

chaosSuite('redis', [{ seed: 101, seconds: 14 }])

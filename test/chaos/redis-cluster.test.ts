/** The chaos suite on redis-cluster: see docs/chaos.md. */
import { chaosSuite } from './suite.js'

chaosSuite('redis-cluster', [{ seed: 202, seconds: 14 }])

/** The chaos suite on zookeeper: see docs/chaos.md. */
import { chaosSuite } from './suite.js'

chaosSuite('zookeeper', [{ seed: 707, seconds: 14 }])

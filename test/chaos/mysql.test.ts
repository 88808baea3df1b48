/** The chaos suite on mysql: see docs/chaos.md. */
import { chaosSuite } from './suite.js'

chaosSuite('mysql', [{ seed: 1001, seconds: 14 }])

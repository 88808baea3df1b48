/** The chaos suite on postgres: see docs/chaos.md. */
import { chaosSuite } from './suite.js'

chaosSuite('postgres', [{ seed: 505, seconds: 14 }])

/** The chaos suite on etcd: see docs/chaos.md. */
import { chaosSuite } from './suite.js'

chaosSuite('etcd', [{ seed: 606, seconds: 14 }])

/** The chaos suite on a three-member etcd cluster (a member killed and started again): see docs/chaos.md. */
import { chaosSuite } from './suite.js'

chaosSuite('etcd-cluster', [{ seed: 1111, seconds: 10 }], 6)

/** The chaos suite on redis-sentinel: see docs/chaos.md. */
import { chaosSuite } from './suite.js'

// Seed 303 once showed two holders more than 2 ttl after the sentinels named
// the new master: clients still on the old master were granted holds until it
// became a replica. A failover now heals when both have happened.
chaosSuite('redis-sentinel', [{ seed: 303, seconds: 14, found: 'holds granted on the old master after the sentinels named the new one' }])

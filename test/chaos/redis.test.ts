/** The chaos suite on redis: see docs/chaos.md. */
import { chaosSuite } from './suite.js'

chaosSuite('redis', [
  { seed: 101, seconds: 14 },
  // With lease.held read against the timer instead of the deadline, this plan's stalls found leases that looked held after a pause.
  { seed: 1, seconds: 10, faults: ['client-stall'], found: 'a lapsed hold that looked held after a pause' },
  // With failed calls re-sent by ioredis after the reconnect (and their give-backs dropped), this plan's long restarts found ghost holds.
  { seed: 1, seconds: 10, faults: ['store-restart'], primitives: ['mutex'], found: 'a ghost hold from an attempt re-sent after it failed' },
])

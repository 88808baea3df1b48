/**
 * The internal API: what the lock server (src/server) and the CLI (src/cli)
 * may use beyond the public API (src/index.ts), and why. They import the
 * core and the drivers only through these two files (test/unit/layers.test.ts
 * holds them to it), so a change to anything not listed here cannot break
 * them, and anything added here says why it had to be.
 *
 * Not part of the package's exports: applications never see it.
 */

// The driver contract: the server keeps detached holds for HTTP clients and speaks to the store's driver itself, not through a Baton.
export {
  MAX_DESCRIPTION_BYTES,
  MAX_VALUE_BYTES,
  type Driver,
  type ExtendResult,
  type HoldRef,
  type LockSpec,
  type Wake,
} from './core/driver.js'
// Detached holds: the server's leases outlive any one request, so it holds them through the keeper's detached grants.
export type { DetachedGrant, DetachedOptions } from './core/keeper.js'
// Validation: the server and the CLI take names, durations, waits and weights from the wire and the command line and must refuse them exactly as the library does.
export { MAX_NAME_BYTES, validateName, validatePrefix } from './core/names.js'
// Reserved names: the server keeps its own state under them, and the CLI's listings leave them out as the server's routes do.
export { RESERVED_NAME_PREFIX, isReservedName } from './core/names.js'
export { MAX_DURATION_MS, MIN_TTL_MS, parseDuration, parseTtl } from './core/duration.js'
export { parseWait, parseWeight } from './core/options.js'
export { parseStoreUrl } from './core/url.js'
// Typed errors: bad input at the server and the CLI becomes the same BatonError the library throws.
export { invalidArgument } from './core/errors.js'
// Time: deadlines on the server (waits, sessions, leases) run on the same monotonic clock as the core's.
export { monotonicNow } from './core/clock.js'
// Owners: the server shows owners as the library does (a digest for its own clients); the CLI's server and `baton run` name themselves as a client would.
export { newClientId, publicOwner } from './core/owner.js'
export { describeProcess } from './core/options.js'
// Elections: the server names a name's leader exactly as the library's Election does.
export { leaderHold } from './primitives/election.js'
// Listing: the server pages through names in the library's order, so a page boundary means the same on both sides.
export { compareNames } from './core/list.js'
// Events: the CLI's demo shows the library's acquire events as they happen.
export type { AcquireEvent } from './core/events.js'
// The private memory store: `baton serve memory://` keeps its locks in its own store, never in a shared memory:// name.
export { createPrivateMemoryDriver } from './drivers/memory/index.js'

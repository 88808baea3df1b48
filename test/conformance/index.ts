import { after, afterEach, before, describe } from 'node:test'
import { SuiteContext, type MakeStore } from './context.js'
import { safety } from './safety.js'
import { fencing } from './fencing.js'
import { ownership } from './owner.js'
import { waiting } from './waiting.js'
import { reentrancy } from './reentrancy.js'
import { loss } from './loss.js'
import { badInput } from './bad-input.js'
import { lockDelay } from './lock-delay.js'
import { crashes } from './crashes.js'
import { fair } from './fair.js'
import { rwlock } from './rwlock.js'
import { semaphore } from './semaphore.js'
import { weighted } from './weighted.js'
import { listing } from './listing.js'
import { faults } from './faults.js'
import { credentials } from './credentials.js'
import { describing } from './describe.js'
import { multiLock } from './multi.js'
import { election } from './election.js'
import { pausedHolders } from './paused.js'

export type { StoreHarness, MakeStore, FaultSupport, FaultCase } from './context.js'

/**
 * The lock properties of docs/design.md, stated once and run against every store.
 * A store is done when this passes unchanged. Tests that a store can not take
 * part in (a memory store has no other process to share with, nothing to
 * pause) are skipped with the reason printed, never silently.
 */
export function runConformance(storeName: string, makeStore: MakeStore): void {
  describe(`conformance: ${storeName}`, () => {
    const ctx = new SuiteContext()
    before(async () => {
      ctx.harness = await makeStore()
    })
    afterEach(() => ctx.cleanup())
    after(async () => {
      await ctx.harness.close()
      // A file whose process outlives its tests ends only at the runner's timeout, far
      // from the cause: name what still keeps it alive (an unref'd timer keeps nothing).
      setTimeout(() => {
        console.error(`conformance: ${storeName}: still running 30 s after its tests, kept alive by ${JSON.stringify(process.getActiveResourcesInfo())}`)
      }, 30_000).unref()
    })

    safety(ctx)
    fencing(ctx)
    ownership(ctx)
    waiting(ctx)
    reentrancy(ctx)
    loss(ctx)
    pausedHolders(ctx)
    lockDelay(ctx)
    crashes(ctx)
    fair(ctx)
    rwlock(ctx)
    semaphore(ctx)
    weighted(ctx)
    listing(ctx)
    describing(ctx)
    multiLock(ctx)
    election(ctx)
    badInput(ctx)
    credentials(ctx)
    faults(ctx)
  })
}

import type { Scenario } from '../types.js'
import { commands } from './commands.js'
import { handoff } from './handoff.js'
import { memoryStore } from './memory-store.js'
import { memory } from './memory.js'
import { parallel } from './parallel.js'
import { uncontended } from './uncontended.js'

/**
 * Every scenario, in report order. Add one (fair mutex, rwlock readers,
 * semaphore…) by writing bench/scenarios/<name>.ts and listing it here.
 */
export const scenarios: readonly Scenario[] = [uncontended, parallel, handoff, commands, memory, memoryStore]

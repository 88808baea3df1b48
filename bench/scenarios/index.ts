import type { Scenario } from '../types.js'
import { cliStartup } from './cli-startup.js'
import { commands } from './commands.js'
import { consensusScenarios } from './consensus.js'
import { dashboard } from './dashboard.js'
import { election } from './election.js'
import { fairCommands } from './fair-commands.js'
import { fairHandoff } from './fair-handoff.js'
import { handoff } from './handoff.js'
import { listing } from './listing.js'
import { memoryStore } from './memory-store.js'
import { memory } from './memory.js'
import { multi } from './multi.js'
import { otel } from './otel.js'
import { parallel } from './parallel.js'
import { pgHandoff, pgStatements, pgUncontended } from './postgres.js'
import { mysqlHandoff, mysqlUncontended } from './mysql.js'
import { redlockScenario } from './redlock.js'
import { replicasScenario } from './replicas.js'
import { rwlockReaders } from './rwlock-readers.js'
import { semaphore } from './semaphore.js'
import { server } from './server.js'
import { uncontended } from './uncontended.js'
import { weighted } from './weighted.js'

/**
 * Every scenario, in report order. Add one by writing
 * bench/scenarios/<name>.ts and listing it here.
 */
export const scenarios: readonly Scenario[] = [
  uncontended, parallel, handoff, commands, memory, memoryStore,
  fairHandoff, fairCommands, rwlockReaders, semaphore, weighted, multi,
  pgUncontended, pgHandoff, pgStatements,
  mysqlUncontended, mysqlHandoff,
  ...consensusScenarios, server, redlockScenario, cliStartup, dashboard,
  election, otel, replicasScenario, listing,
]

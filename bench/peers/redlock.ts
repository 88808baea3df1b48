// node-redlock 5 beta's package.json "exports" has no "types" condition, so
// TypeScript (NodeNext) can not find its typings through the package name;
// take them from the file directly and the runtime module from the package.
import type RedlockTyped from '../../node_modules/redlock/dist/index.js'
import type { ExecutionError as ExecutionErrorTyped } from '../../node_modules/redlock/dist/index.js'
// @ts-expect-error TS7016: typed through the import above
import * as redlockModule from 'redlock'
import { redlockContender, redlockProfileLabel } from './redlock-common.js'
import type { PeerDef } from './types.js'

const { default: Redlock, ExecutionError } = redlockModule as {
  default: typeof RedlockTyped
  ExecutionError: typeof ExecutionErrorTyped
}

/** node-redlock 5 (beta) on one Redis, or on every node of a redlock:// URL. */
export const redlock: PeerDef = {
  id: 'redlock',
  store: 'redis',
  label: (profile) => `redlock 5β (${redlockProfileLabel(profile)})`,
  create: (options) =>
    redlockContender(
      redlock.label(options.profile),
      options,
      (clients, settings) => new Redlock(clients, settings),
      (error) => error instanceof ExecutionError,
    ),
}

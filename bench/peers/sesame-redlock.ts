import { ExecutionError, Redlock } from '@sesamecare-oss/redlock'
import { redlockContender, redlockProfileLabel } from './redlock-common.js'
import type { PeerDef } from './types.js'

/** @sesamecare-oss/redlock (maintained fork of node-redlock) on one Redis, or on every node of a redlock:// URL. */
export const sesameRedlock: PeerDef = {
  id: 'sesame-redlock',
  store: 'redis',
  label: (profile) => `@sesamecare-oss/redlock (${redlockProfileLabel(profile)})`,
  create: (options) =>
    redlockContender(
      sesameRedlock.label(options.profile),
      options,
      (clients, settings) => new Redlock(clients, settings),
      (error) => error instanceof ExecutionError,
    ),
}

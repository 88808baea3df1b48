import { ExecutionError, Redlock } from '@sesamecare-oss/redlock'
import { redlockContender, redlockProfileLabel } from './redlock-common.js'
import type { PeerDef } from './types.js'

/** @sesamecare-oss/redlock (maintained fork of node-redlock) on a single Redis. */
export const sesameRedlock: PeerDef = {
  id: 'sesame-redlock',
  store: 'redis',
  label: (profile) => `@sesamecare-oss/redlock (${redlockProfileLabel(profile)})`,
  create: (options) =>
    redlockContender(
      sesameRedlock.label(options.profile),
      options,
      (client, settings) => new Redlock([client], settings),
      (error) => error instanceof ExecutionError,
    ),
}

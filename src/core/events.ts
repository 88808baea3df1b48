import diagnostics_channel from 'node:diagnostics_channel'
import type { HoldMode, LockKind } from './driver.js'

/**
 * Diagnostics channels: tracing, metrics, the server's event stream and the
 * tests subscribe here. Publishing costs nothing when nobody listens.
 */
export interface HoldEvent {
  name: string
  owner: string
  token: bigint
  mode: HoldMode
  store: string
}
export interface AcquireEvent extends HoldEvent {
  waitedMs: number
  reentered: boolean
  handoff: boolean
  /** What the name is used as, and whether the line is strictly in arrival order (absent on a re-entry). */
  kind?: LockKind
  fair?: boolean
}
export interface LostEvent extends HoldEvent {
  error: Error
  /** True when the lease ran out without a confirmed renewal; false when the store took it (forced, replaced). */
  expired: boolean
}
export interface WaitEvent {
  name: string
  owner: string
  mode: HoldMode
  store: string
}

/**
 * Something a client works around but its operator should hear of (a
 * degraded mode, not a failure): `code` to match on, `message` for people.
 */
export interface WarningEvent {
  store: string
  code: string
  message: string
}

export const channels = {
  acquire: diagnostics_channel.channel('baton:acquire'),
  release: diagnostics_channel.channel('baton:release'),
  extend: diagnostics_channel.channel('baton:extend'),
  lost: diagnostics_channel.channel('baton:lost'),
  /** A waiter joined the line (the first attempt did not grant). */
  wait: diagnostics_channel.channel('baton:wait'),
  /** A waiter gave up: timeout or abort. */
  giveUp: diagnostics_channel.channel('baton:give-up'),
  /** A client fell back to a degraded mode it recovers from by itself (WarningEvent). */
  warning: diagnostics_channel.channel('baton:warning'),
} as const

/** Publishes a WarningEvent; free when nobody listens. */
export function warn(store: string, code: string, message: string): void {
  if (channels.warning.hasSubscribers) channels.warning.publish({ store, code, message } satisfies WarningEvent)
}

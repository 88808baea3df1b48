import { BatonError, backendUnavailable } from '../../core/errors.js'

/** What one node of a consensus store said when asked how it is. */
export interface NodeHealth {
  /** host:port, as in the URL. */
  readonly node: string
  /** serving: part of a working majority; no-quorum: up but without a leader; down: no answer. */
  readonly state: 'serving' | 'no-quorum' | 'down'
  readonly detail: string
}

/**
 * Names a failed request of a consensus store (etcd, ZooKeeper) by asking its
 * nodes how they are: "nodes are up but have no majority" (QUORUM_NOT_REACHED)
 * is not "nothing answers" (BACKEND_UNAVAILABLE), and neither is "someone
 * holds the lock" (LOCK_TIMEOUT, which never comes from here). Every node's
 * answer goes into `nodes`.
 *
 * QUORUM_NOT_REACHED when some node answered and either says it has no
 * leader, or fewer than a majority of the listed nodes serve. A URL that
 * lists only some members can thus report a lost quorum only from what the
 * members it lists say.
 */
export async function diagnoseFailure(store: string, cause: unknown, probe: () => Promise<NodeHealth[]>): Promise<BatonError> {
  if (cause instanceof BatonError) return cause
  const health = await probe().catch(() => [] as NodeHealth[])
  const nodes = Object.fromEntries(health.map((h) => [h.node, h.detail]))
  const serving = health.filter((h) => h.state === 'serving').length
  const answered = health.filter((h) => h.state !== 'down').length
  const leaderless = health.some((h) => h.state === 'no-quorum')
  if (answered > 0 && (leaderless || serving <= health.length / 2)) {
    const detail = cause instanceof Error ? cause.message : String(cause)
    const each = health.map((h) => `${h.node}: ${h.detail}`).join('; ')
    return new BatonError(
      'QUORUM_NOT_REACHED',
      `the ${store} has no working majority (${each}); the request failed with: ${detail}. It works again once a majority of its nodes is up and connected`,
      { cause, nodes },
    )
  }
  const error = backendUnavailable(store, cause)
  if (health.length === 0) return error
  return new BatonError(error.code, error.message.replace(/^baton: /, ''), { cause, nodes })
}

/** A store request whose failure is reported as `diagnose` names it (a typed BatonError, see diagnoseFailure). */
export async function diagnosed<T>(promise: Promise<T>, diagnose: (cause: unknown) => Promise<BatonError>): Promise<T> {
  try {
    return await promise
  } catch (cause) {
    throw await diagnose(cause)
  }
}

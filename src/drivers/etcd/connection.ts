import { readFileSync } from 'node:fs'
import {
  Etcd3, EtcdAuthenticationFailedError, EtcdInvalidAuthTokenError, EtcdPermissionDeniedError,
  GRPCUnauthenticatedError, isRecoverableError, type IOptions,
} from 'etcd3'
import { circuitBreaker, ConsecutiveBreaker, handleWhen, noop, type IBackoff } from 'cockatiel'
import type { DriverOptions } from '../../core/driver.js'
import { diagnosed, diagnoseFailure, type NodeHealth } from '../sequenced/quorum.js'
import { BatonError, backendUnavailable, invalidArgument } from '../../core/errors.js'
import type { StoreUrl } from '../../core/url.js'

const DEFAULT_PORT = 2379
const RECONNECT_BACKOFF_MAX_MS = 1000
/** The first delay before etcd3 re-opens a failed watch stream (cockatiel's default first step). */
const WATCH_FIRST_DELAY_MS = 128
/** A watch stream fails with an 'error' and then an 'end' when its client closes: neither waits. */
const FAILURES_OF_CLOSING = 2

const memberBreaker = () => circuitBreaker(handleWhen(isRecoverableError), {
  halfOpenAfter: 1000,
  breaker: new ConsecutiveBreaker(3),
})

export interface EtcdTarget {
  readonly options: IOptions
  /** Prepended to every key (`?prefix=`, default none, so keys match `etcdctl lock`). */
  readonly keyPrefix: string
  readonly display: string
  /** The deadline of every command (and of setting up a watch). */
  readonly commandTimeoutMs: number
  /** How long a member may take to say how it is, when a request failed. */
  readonly probeTimeoutMs: number
}

/**
 * `etcd://[user:pass@]h1:p,h2:p[?prefix=app/]` and `etcds://…[?ca=/path/ca.pem]`
 * (TLS). Every command gets `commandTimeoutMs` as its gRPC deadline; streams
 * (watch, keepalive) have none.
 */
export function etcdTarget(url: StoreUrl, options: DriverOptions): EtcdTarget {
  if (url.scheme !== 'etcd' && url.scheme !== 'etcds') throw invalidArgument(`the etcd driver does not handle ${url.scheme}://`)
  if (url.hosts.length === 0) throw invalidArgument(`${url.display} must name at least one etcd endpoint, e.g. etcd://127.0.0.1:2379`)
  if (url.path !== '') throw invalidArgument(`${url.display} has a path "${url.path}"; etcd URLs take none (use ?prefix= for a key prefix)`)
  const keyPrefix = url.params.get('prefix') ?? ''
  if (/[\u0000-\u001f\u007f]/.test(keyPrefix) || keyPrefix.length > 128) {
    throw invalidArgument(`"prefix" in ${url.display} must be at most 128 printable characters`)
  }
  const tls = url.scheme === 'etcds'
  const hosts = url.hosts.map((h) => `${tls ? 'https' : 'http'}://${h.host.includes(':') ? `[${h.host}]` : h.host}:${h.port ?? DEFAULT_PORT}`)
  const deadline = options.commandTimeoutMs
  const etcdOptions: IOptions = {
    hosts,
    dialTimeout: options.connectTimeoutMs,
    // grpc-js shares one connection per address between all channels of the
    // process, with its reconnect backoff (up to 2 min): a client opened, or a
    // service re-created by etcd3 after an error, would wait out the backoff
    // an earlier, dead connection earned. Each channel gets its own, and a
    // lost one is dialled again within a second.
    grpcOptions: { 'grpc.use_local_subchannel_pool': 1, 'grpc.max_reconnect_backoff_ms': RECONNECT_BACKOFF_MAX_MS },
    // etcd3's default breaker refuses every request to a member for 5 s after
    // 3 failures. With one member there is nowhere else to send them, so it
    // only delays the recovery; with several, a failing member is skipped for
    // one second, then tried again.
    faultHandling: { host: () => (hosts.length === 1 ? noop : memberBreaker()) },
    defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + deadline }),
    ...(url.username !== undefined ? { auth: { username: url.username, password: url.password ?? '' } } : {}),
    ...(tls ? caOption(url) : {}),
  }
  return { options: etcdOptions, keyPrefix, display: url.display, commandTimeoutMs: deadline, probeTimeoutMs: Math.min(deadline, 1000) }
}

function caOption(url: StoreUrl): Pick<IOptions, 'credentials'> {
  const caPath = url.params.get('ca')
  if (caPath === null) return {}
  try {
    return { credentials: { rootCertificate: readFileSync(caPath) } }
  } catch (cause) {
    throw invalidArgument(`"ca" in ${url.display} names a file that can not be read: ${caPath}`, cause)
  }
}

/** etcd3 failures → the typed errors every store reports (credentials never appear). */
export function etcdFailure(display: string, cause: unknown): BatonError {
  if (cause instanceof BatonError) return cause
  if (
    cause instanceof EtcdAuthenticationFailedError || cause instanceof EtcdInvalidAuthTokenError ||
    cause instanceof GRPCUnauthenticatedError || cause instanceof EtcdPermissionDeniedError
  ) {
    return new BatonError('UNAUTHORIZED', `the etcd store at ${display} refused the user name or password in the URL (${(cause as Error).message})`, { cause })
  }
  // etcd with auth on answers a request without a user at once; that is no outage.
  const message = cause instanceof Error ? cause.message : String(cause)
  if (/user name is empty/i.test(message)) {
    return new BatonError('UNAUTHORIZED', `the etcd store at ${display} has authentication on and the URL names no user (etcd said: user name is empty); use etcd://user:password@host:port`, { cause })
  }
  return backendUnavailable(`etcd store at ${display}`, cause)
}

/**
 * A failed request, named by what the members say (Maintenance.Status is
 * answered by each member alone, without a quorum): a member with no leader,
 * or a majority of members silent, is QUORUM_NOT_REACHED with each member's
 * answer; nobody answering is BACKEND_UNAVAILABLE.
 */
export async function etcdDiagnosis(target: EtcdTarget, cause: unknown): Promise<BatonError> {
  const plain = etcdFailure(target.display, cause)
  if (plain.code !== 'BACKEND_UNAVAILABLE') return plain
  return diagnoseFailure(`etcd cluster at ${target.display}`, cause, () => Promise.all([target.options.hosts].flat().map((host) => memberHealth(target, host))))
}

async function memberHealth(target: EtcdTarget, host: string): Promise<NodeHealth> {
  const node = host.replace(/^https?:\/\//, '')
  // One member, one try: the client's retries across members would hide which one answered.
  const client = new Etcd3({
    ...target.options,
    hosts: [host],
    dialTimeout: target.probeTimeoutMs,
    defaultCallOptions: () => ({ deadline: Date.now() + target.probeTimeoutMs }),
    faultHandling: { host: () => noop, global: noop },
  })
  try {
    const status = await client.maintenance.status()
    const errors = (status as { errors?: string[] }).errors ?? []
    if (status.leader === '0' || errors.length > 0) return { node, state: 'no-quorum', detail: `up, ${errors.join(', ') || 'no leader'}` }
    return { node, state: 'serving', detail: `up, leader ${BigInt(status.leader).toString(16)}` }
  } catch (error) {
    return { node, state: 'down', detail: `no answer (${error instanceof Error ? error.message : String(error)})` }
  } finally {
    client.close()
  }
}

/**
 * How long etcd3 waits before re-opening a failed watch stream, one per
 * client. etcd3 arms that timer on every failure of the stream, whether any
 * watcher is left or not, and never clears it; its default backoff grows to
 * 30 s. A client closed after a few faults left such timers behind, each
 * keeping the process alive for up to 30 s after close() (seen as a test file
 * outliving its tests, kept alive by etcd3's WatchManager.handleError timers).
 * So the delay is at most a second, as grpc's own reconnects (grpcOptions),
 * and the failures that closing the client causes get none: the timer fires
 * at once and finds no watcher (close detached them all).
 */
export class WatchReconnects {
  private closed = false
  private failuresSinceClose = 0

  /** For etcd3's `faultHandling.watchBackoff`: `next()` is the first delay. */
  readonly backoff: IBackoff<unknown> = { duration: 0, next: () => this.attempt(0) }

  /** Called before the client closes. */
  close(): void {
    this.closed = true
  }

  private attempt(index: number): IBackoff<unknown> {
    const delayMs = (): number => {
      if (this.closed && this.failuresSinceClose++ < FAILURES_OF_CLOSING) return 0
      return Math.min(RECONNECT_BACKOFF_MAX_MS, WATCH_FIRST_DELAY_MS * 2 ** Math.min(index, 16))
    }
    return { get duration() { return delayMs() }, next: () => this.attempt(index + 1) }
  }
}

/** Opens a client and proves it can talk (and authenticate) within the connect timeout. */
export async function openEtcd(target: EtcdTarget, timeoutMs: number, reconnects: WatchReconnects): Promise<Etcd3> {
  const client = new Etcd3({ ...target.options, faultHandling: { ...target.options.faultHandling, watchBackoff: reconnects.backoff } })
  let timer: NodeJS.Timeout | undefined
  const deadline = Date.now() + timeoutMs
  // A member not reachable yet fails a request at once (its connection is
  // refused or reset): asked again until the connect timeout.
  const probe = async (): Promise<void> => {
    for (;;) {
      try {
        await client.get('\u0000baton-probe').string()
        return
      } catch (cause) {
        if (etcdFailure(target.display, cause).code !== 'BACKEND_UNAVAILABLE' || Date.now() + 100 >= deadline) throw cause
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    }
  }
  try {
    await Promise.race([
      probe(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)
      }),
    ])
    return client
  } catch (cause) {
    client.close()
    throw await etcdDiagnosis(target, cause)
  } finally {
    clearTimeout(timer)
  }
}

/** A request of this client: its failure as the typed error every store reports (see etcdDiagnosis). */
export function guarded<T>(target: EtcdTarget, promise: Promise<T>): Promise<T> {
  return diagnosed(promise, (cause) => etcdDiagnosis(target, cause))
}

import type { EventEmitter } from 'node:events'
import { connect as connectTcp } from 'node:net'
import zookeeper, { type Client, type Event, type Stat } from 'node-zookeeper-client'
import type { DriverOptions } from '../../core/driver.js'
import { monotonicNow } from '../../core/clock.js'
import { safetyMarginMs } from '../../core/margin.js'
import { BatonError, backendUnavailable, invalidArgument } from '../../core/errors.js'
import type { StoreUrl } from '../../core/url.js'
import { diagnoseFailure, type NodeHealth } from '../sequenced/quorum.js'

const DEFAULT_PORT = 2181
export const { Exception, CreateMode, ACL } = zookeeper

export interface ZkTarget {
  /** `h1:p,h2:p[/chroot]` for the client library. */
  readonly connectionString: string
  /** Every server of the URL, asked how it is when a request fails. */
  readonly servers: readonly { readonly host: string; readonly port: number }[]
  /** '' or '/app/locks': made at connect when missing, as Curator's namespace is. */
  readonly chroot: string
  readonly username?: string
  readonly password?: string
  readonly display: string
  readonly connectTimeoutMs: number
  readonly commandTimeoutMs: number
}

/** `zk://[user:pass@]h1:p,h2:p[/chroot]`; user:pass is sent as a `digest` identity. */
export function zkTarget(url: StoreUrl, options: DriverOptions): ZkTarget {
  if (url.scheme !== 'zk') throw invalidArgument(`the ZooKeeper driver does not handle ${url.scheme}://`)
  if (url.hosts.length === 0) throw invalidArgument(`${url.display} must name at least one ZooKeeper server, e.g. zk://127.0.0.1:2181`)
  const chroot = url.path === '' ? '' : `/${url.path.replace(/\/+$/, '')}`
  if (chroot !== '' && !/^(\/[^/\u0000-\u001f\u007f]+)+$/.test(chroot)) {
    throw invalidArgument(`the chroot "${url.path}" in ${url.display} must be a ZooKeeper path like /app/locks`)
  }
  return {
    chroot,
    servers: url.hosts.map((h) => ({ host: h.host, port: h.port ?? DEFAULT_PORT })),
    connectionString: url.hosts.map((h) => `${h.host.includes(':') ? `[${h.host}]` : h.host}:${h.port ?? DEFAULT_PORT}`).join(',') + chroot,
    ...(url.username !== undefined ? { username: url.username, password: url.password ?? '' } : {}),
    display: url.display,
    connectTimeoutMs: options.connectTimeoutMs,
    commandTimeoutMs: options.commandTimeoutMs,
  }
}

export function zkFailure(display: string, cause: unknown): BatonError {
  if (cause instanceof BatonError) return cause
  const code = errorCode(cause)
  if (code === Exception.NO_AUTH || code === Exception.AUTH_FAILED) {
    return new BatonError('UNAUTHORIZED', `the ZooKeeper ensemble at ${display} refused access with the identity in the URL (${String(cause)})`, { cause })
  }
  return backendUnavailable(`ZooKeeper ensemble at ${display}`, cause)
}

/**
 * A failed request, named by what the servers say to `srvr` (the one
 * four-letter word ZooKeeper allows by default): a server that is up but "not
 * currently serving requests" has lost its quorum; nobody answering at all is
 * BACKEND_UNAVAILABLE.
 */
export async function zkDiagnosis(target: ZkTarget, cause: unknown): Promise<BatonError> {
  const plain = zkFailure(target.display, cause)
  if (plain.code !== 'BACKEND_UNAVAILABLE') return plain
  return diagnoseFailure(`ZooKeeper ensemble at ${target.display}`, cause, () => Promise.all(target.servers.map((s) => serverHealth(s, Math.min(target.commandTimeoutMs, 1000)))))
}

function serverHealth(server: { host: string; port: number }, timeoutMs: number): Promise<NodeHealth> {
  const node = `${server.host.includes(':') ? `[${server.host}]` : server.host}:${server.port}`
  return new Promise((resolve) => {
    const socket = connectTcp({ host: server.host, port: server.port })
    let text = ''
    const timer = setTimeout(() => socket.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)
    socket.on('connect', () => socket.write('srvr'))
    socket.on('data', (chunk: Buffer) => (text += chunk.toString()))
    socket.on('close', () => {
      clearTimeout(timer)
      const mode = /Mode: (\w+)/.exec(text)?.[1]
      if (mode) resolve({ node, state: 'serving', detail: `up, ${mode}` })
      else if (/not currently serving/i.test(text)) resolve({ node, state: 'no-quorum', detail: 'up, not serving requests (ZooKeeperServer not running: no quorum)' })
      else if (text !== '') resolve({ node, state: 'serving', detail: `up (${text.trim().slice(0, 80)})` })
      // Accepted, then closed without a word (at maxClientCnxns, or a balancer with no server behind it).
      else resolve({ node, state: 'down', detail: 'no answer (it accepted the connection and closed it without answering)' })
    })
    socket.on('error', (error) => {
      clearTimeout(timer)
      resolve({ node, state: 'down', detail: `no answer (${error.message})` })
    })
  })
}

export function errorCode(error: unknown): number | undefined {
  if (error instanceof Exception) return error.getCode()
  // A BatonError's cause is a copy of the client's Exception (its message
  // cleaned of secrets), not the Exception itself: its numeric code is kept.
  const code = (error as { code?: unknown } | undefined)?.code
  return typeof code === 'number' ? code : undefined
}

/** A request (or its BatonError) failed because its session's connection dropped or the session ended: not for want of an answer. */
export function sessionInterrupted(error: unknown): boolean {
  const code = errorCode(error instanceof BatonError && error.cause !== undefined ? error.cause : error)
  return code === Exception.CONNECTION_LOSS || code === Exception.SESSION_EXPIRED
}

/**
 * One ZooKeeper session of this client. Its entries (ephemeral nodes) live as
 * long as the session. `confirmedAt` is when the last answered request was
 * sent: the ensemble keeps the session at least until confirmedAt + timeout.
 * The client library has no read timeout (a frozen server looks connected),
 * so every request here has its own deadline, a heartbeat keeps
 * `confirmedAt` fresh, and a heartbeat left unanswered drops the socket so
 * the library moves to another server within the session, as ZooKeeper's own
 * Java client does.
 */
export class ZkSession {
  readonly client: Client
  confirmedAt = 0
  timeoutMs = 0
  expired = false
  private heartbeat: NodeJS.Timeout | undefined
  private doubtTimer: NodeJS.Timeout | undefined
  private beating = false

  constructor(
    private readonly target: ZkTarget,
    readonly requestedMs: number,
    onExpired: (session: ZkSession) => void,
    /**
     * Called when the ensemble may have expired the session by now (no answer
     * for a whole session timeout, less a safety margin), whether or not the
     * library noticed: Curator's "suspended, then lost", by our own clock.
     */
    private readonly onDoubt: (session: ZkSession) => void = () => {},
    /**
     * Called when the session is connected again after losing its connection:
     * a watch's notice sent while it was cut is lost for good, so what the
     * session's watches stood for must be read again.
     */
    onReconnected: (session: ZkSession) => void = () => {},
  ) {
    this.client = zookeeper.createClient(target.connectionString, { sessionTimeout: requestedMs, spinDelay: 100, retries: 0 })
    if (target.username !== undefined) this.client.addAuthInfo('digest', Buffer.from(`${target.username}:${target.password}`))
    let cut = false
    this.client.on('disconnected', () => (cut = true))
    this.client.on('connected', () => {
      if (!cut || this.expired) return
      cut = false
      onReconnected(this)
    })
    this.client.on('expired', () => {
      this.expired = true
      this.stop()
      onExpired(this)
    })
  }

  /** Connects within the connect timeout; the ensemble picks the session timeout (2-20 × tickTime). */
  async open(): Promise<void> {
    const startedAt = monotonicNow()
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.close()
        reject(new Error(`no session within ${this.target.connectTimeoutMs} ms`))
      }, this.target.connectTimeoutMs)
      this.client.once('connected', () => {
        clearTimeout(timer)
        resolve()
      })
      this.client.once('authenticationFailed', () => {
        clearTimeout(timer)
        this.close()
        reject(new BatonError('UNAUTHORIZED', `the ZooKeeper ensemble at ${this.target.display} refused the identity in the URL`))
      })
      this.client.connect()
    })
    this.confirmedAt = startedAt
    this.timeoutMs = this.client.getSessionTimeout()
    this.heartbeat = setInterval(() => void this.beat(), Math.max(50, this.timeoutMs / 4))
    this.heartbeat.unref()
    this.armDoubt()
  }

  /** Fires onDoubt once the session can have ended without us hearing of it. */
  private armDoubt(): void {
    clearTimeout(this.doubtTimer)
    if (this.expired) return
    const at = this.confirmedAt + this.timeoutMs - safetyMarginMs(this.timeoutMs)
    this.doubtTimer = setTimeout(() => {
      if (this.confirmedAt + this.timeoutMs - safetyMarginMs(this.timeoutMs) > monotonicNow()) return this.armDoubt()
      this.onDoubt(this)
    }, Math.max(0, at - monotonicNow()))
    this.doubtTimer.unref()
  }

  /** How long the ensemble surely keeps this session, by our monotonic clock. */
  remainingMs(): number {
    return this.expired ? 0 : this.confirmedAt + this.timeoutMs - monotonicNow()
  }

  /** One request with our own deadline; an answer (even an error answer) confirms the session. */
  call<T>(send: (done: (error: unknown, value?: T) => void) => void, timeoutMs = this.target.commandTimeoutMs): Promise<T> {
    const sentAt = monotonicNow()
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)
      send((error, value) => {
        clearTimeout(timer)
        if (error === null || error === undefined || errorCode(error) !== undefined) {
          const code = errorCode(error)
          if (code !== Exception.CONNECTION_LOSS && code !== Exception.SESSION_EXPIRED && code !== Exception.OPERATION_TIMEOUT) {
            const doubted = this.confirmedAt + this.timeoutMs - safetyMarginMs(this.timeoutMs) <= monotonicNow()
            this.confirmedAt = Math.max(this.confirmedAt, sentAt)
            if (doubted && this.timeoutMs > 0) this.armDoubt()
          }
        }
        if (error) reject(error)
        else resolve(value as T)
      })
    })
  }

  exists(path: string, watcher?: (event: Event) => void): Promise<Stat | null> {
    return this.call<Stat | null>((done) => {
      if (watcher) this.client.exists(path, watcher, (e, stat) => done(e, stat ?? null))
      else this.client.exists(path, (e, stat) => done(e, stat ?? null))
    })
  }

  /**
   * Whether `path` exists, by a check inside a multi: ZooKeeper orders a multi
   * through its leader like any write, so a follower cut off from the leader
   * can not answer it from its own (possibly stale) copy, and a session the
   * leader has expired gets SESSION_EXPIRED. A plain `exists` would be read
   * from whichever server the session is on. (The client library has no
   * `sync`, which would do the same for a read.)
   */
  existsAtLeader(path: string): Promise<boolean> {
    return this.call<boolean>((done) => this.client.transaction().check(path).commit((error) => {
      if (errorCode(error) === Exception.NO_NODE) done(null, false)
      else done(error, true)
    }))
  }

  /** The node's data and Stat, or null when it does not exist. */
  getData(path: string): Promise<{ data: Buffer; stat: Stat } | null> {
    return this.call((done) => this.client.getData(path, (e, data, stat) => {
      if (errorCode(e) === Exception.NO_NODE) done(null, null)
      else done(e, { data: data ?? Buffer.alloc(0), stat })
    }))
  }

  children(path: string): Promise<string[]> {
    return this.call<string[]>((done) => this.client.getChildren(path, (e, children) => done(e, children)))
  }

  /** The children, with a one-shot watch on them (leader election observers). */
  childrenWatched(path: string, watcher: (event: Event) => void): Promise<string[]> {
    return this.call<string[]>((done) => this.client.getChildren(path, watcher, (e, children) => done(e, children)))
  }

  /** The children and the parent's own Stat (its creation zxid), in one request. */
  childrenWithStat(path: string): Promise<{ children: string[]; stat: Stat }> {
    return this.call((done) => this.client.getChildren(path, (e, children, stat) => done(e, { children, stat })))
  }

  create(path: string, data: Buffer | undefined, mode: number): Promise<string> {
    return this.call<string>((done) => this.client.create(path, data ?? Buffer.alloc(0), (ACL as unknown as { OPEN_ACL_UNSAFE: zookeeper.ACL[] }).OPEN_ACL_UNSAFE, mode, (e, p) => done(e, p)))
  }

  remove(path: string): Promise<void> {
    return this.call<void>((done) => this.client.remove(path, -1, (e) => done(e)))
  }

  mkdirp(path: string): Promise<string> {
    return this.call<string>((done) => this.client.mkdirp(path, (e, p) => done(e, p)))
  }

  /**
   * `exists` with a watch shared by every caller of this session watching
   * `path`: the client library keeps one emitter per watched path with one
   * listener per distinct function, so many waiters of one client behind
   * the same node (weighted permits behind a heavy holder) each added one
   * and tripped Node's MaxListenersExceededWarning. One function per
   * session fans each event out to the callers registered since the last.
   */
  existsShared(path: string, watcher: (event: Event) => void): Promise<Stat | null> {
    let callers = this.sharedWatches.get(path)
    if (!callers) this.sharedWatches.set(path, (callers = new Set()))
    callers.add(watcher)
    return this.exists(path, this.fanOut)
  }

  private readonly sharedWatches = new Map<string, Set<(event: Event) => void>>()
  private readonly fanOut = (event: Event): void => {
    const callers = this.sharedWatches.get(event.getPath())
    this.sharedWatches.delete(event.getPath())
    for (const each of callers ?? []) each(event)
  }

  /**
   * Forgets `watcher` on `path` on this side: ZooKeeper (and the client
   * library) offer no way to remove a watch, and the library keeps an
   * emitter per path until its watch fires, which for a name nobody
   * changes is forever. The server's watch then fires once, to nobody.
   */
  forgetWatch(path: string, watcher: (event: Event) => void): void {
    const manager = (this.client as unknown as { connectionManager?: { watcherManager?: Record<string, Record<string, EventEmitter> | undefined> } })
      .connectionManager?.watcherManager
    for (const kind of ['dataWatchers', 'childWatchers', 'existenceWatchers']) {
      const byPath = manager?.[kind]
      const emitter = byPath?.[path]
      if (!emitter) continue
      emitter.removeListener('notification', watcher)
      if (emitter.listenerCount('notification') === 0) delete byPath[path]
    }
  }

  /** Paths with a watch this session's client keeps on this side (for tests: nothing may pile up). */
  watchedPaths(): number {
    const manager = (this.client as unknown as { connectionManager?: { watcherManager?: Record<string, Record<string, EventEmitter> | undefined> } })
      .connectionManager?.watcherManager
    return ['dataWatchers', 'childWatchers', 'existenceWatchers'].reduce((sum, kind) => sum + Object.keys(manager?.[kind] ?? {}).length, 0)
  }

  /** Sets the node's data; with `version`, only if the node is still at that data version (else BAD_VERSION). */
  setData(path: string, data: Buffer, version = -1): Promise<Stat> {
    return this.call<Stat>((done) => this.client.setData(path, data, version, (e, stat) => done(e, stat)))
  }

  close(): void {
    this.stop()
    this.client.close()
    // The library waits for the answer to its close request with no deadline of its own, on a
    // socket that keeps the process alive: a frozen server (or a silent link) never answers, and
    // the heartbeat that would drop that socket is stopped. Dropped here if still open by then
    // (in the library's closing state, dropping it ends the client: it does not reconnect), with
    // the library's connect timer, which a socket dropped before it connected leaves running.
    const manager = (this.client as unknown as { connectionManager?: { socket?: { destroy(): void }; connectTimeoutHandler?: NodeJS.Timeout } }).connectionManager
    setTimeout(() => {
      clearTimeout(manager?.connectTimeoutHandler)
      manager?.socket?.destroy()
    }, Math.min(this.target.commandTimeoutMs, 1000)).unref()
  }

  private stop(): void {
    clearInterval(this.heartbeat)
    clearTimeout(this.doubtTimer)
  }

  private async beat(): Promise<void> {
    if (this.beating || this.expired) return
    if (monotonicNow() - this.confirmedAt < this.timeoutMs / 4) return
    this.beating = true
    try {
      await this.exists('/', undefined).catch(async () => {
        // No answer in time: leave this server; the library reconnects the session elsewhere.
        const manager = (this.client as unknown as { connectionManager?: { socket?: { destroy(): void } } }).connectionManager
        manager?.socket?.destroy()
      })
    } finally {
      this.beating = false
    }
  }
}

/** Makes the URL's chroot when it is missing (a chrooted client can not). */
export async function ensureChroot(target: ZkTarget): Promise<void> {
  if (target.chroot === '') return
  const plain = new ZkSession({ ...target, chroot: '', connectionString: target.connectionString.slice(0, -target.chroot.length) }, 10_000, () => {})
  try {
    await plain.open()
    await plain.mkdirp(target.chroot)
  } catch (cause) {
    throw zkFailure(target.display, cause)
  } finally {
    plain.close()
  }
}

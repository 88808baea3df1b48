import type { Etcd3, Lease } from 'etcd3'
import { monotonicNow } from '../../core/clock.js'
import { etcdDiagnosis, type EtcdTarget } from './connection.js'

/** The shortest lease asked for; etcd raises it to its own floor (1.5 × election timeout, 2 s by default). */
export const ETCD_MIN_LEASE_SECONDS = 1

/**
 * One etcd lease of this client, kept alive by this class's own timer (one
 * keep-alive at a time, every third of its holds' part), not etcd3's loop: after a
 * stalled stream and a cut, etcd3 can run two loops of one lease and stop only
 * one on release, an interval that keeps the process alive for good. Every
 * entry with the same lease length shares it. `confirmedAt` is when the last
 * acknowledged keep-alive was *sent*: the store keeps the lease at least until
 * confirmedAt + granted, by its own clock.
 */
export class ClientLease {
  id = '0'
  hex = '0'
  confirmedAt = 0
  readonly ready: Promise<void>
  private timer: NodeJS.Timeout | undefined
  private stopped = false

  /** What etcd granted: at least `seconds`, raised to its floor (1.5 × election timeout, 2 s by default). */
  granted: number

  constructor(
    /** Made with `autoKeepAlive: false`. */
    readonly lease: Lease,
    /** What this client asked for (the key of its lease map). */
    readonly seconds: number,
    onLost: (lease: ClientLease, error: unknown) => void,
    grantedSeconds: (id: string) => Promise<number>,
    private readonly answerWithinMs: number,
    /**
     * The lock delay this lease adds after its holds' ttl (0 for none); its
     * marker (see delayMarkerKey) is written before the lease is used.
     */
    readonly delaySeconds: number,
    markDelay: (id: string) => Promise<void>,
  ) {
    this.granted = seconds
    const sentAt = monotonicNow()
    // A grant that failed, or a keep-alive etcd answered with "expired".
    lease.on('lost', (error: unknown) => {
      this.stop()
      onLost(this, error)
    })
    this.ready = lease.grant().then(async (id) => {
      this.id = id
      this.hex = BigInt(id).toString(16)
      this.confirmedAt = sentAt
      this.granted = Math.max(seconds, await grantedSeconds(id))
      this.keepAliveIn(this.everyMs())
      if (delaySeconds > 0) await markDelay(id)
    })
  }

  /**
   * How long every client surely counts this lease's holds as held, by our
   * monotonic clock: until the store ends the lease, less its lock delay
   * (after which a key on it is a phantom, see isPhantom).
   */
  remainingMs(): number {
    return this.confirmedAt + (this.granted - this.delaySeconds) * 1000 - monotonicNow()
  }

  /**
   * A third of the holds' part: a live client's lease never falls within its
   * lock delay of its end, which is how other clients tell a crashed
   * client's keys (phantoms for the delay) from live holds.
   */
  private everyMs(): number {
    return (this.granted - this.delaySeconds) * 1000 / 3
  }

  /** No more keep-alives: etcd ends the lease at its ttl (the keys on it with it). */
  stop(): void {
    this.stopped = true
    clearTimeout(this.timer)
    this.lease.release()
  }

  private keepAliveIn(delayMs: number): void {
    if (this.stopped) return
    clearTimeout(this.timer)
    this.timer = setTimeout(() => void this.keepAlive(), delayMs)
  }

  /** One keep-alive; unanswered (etcd3 sets no deadline on it) or failed, it is tried again soon. */
  private async keepAlive(): Promise<void> {
    const sentAt = monotonicNow()
    const everyMs = this.everyMs()
    let deadline: NodeJS.Timeout | undefined
    try {
      await Promise.race([
        this.lease.keepaliveOnce(),
        new Promise((_, reject) => (deadline = setTimeout(() => reject(new Error('no answer')), this.answerWithinMs))),
      ])
      this.confirmedAt = Math.max(this.confirmedAt, sentAt)
      this.keepAliveIn(everyMs)
    } catch {
      // "Expired" has stopped this lease (see 'lost'); anything else is tried again.
      this.keepAliveIn(Math.min(everyMs, 250))
    } finally {
      clearTimeout(deadline)
    }
  }
}

/**
 * This client's leases, one per length (every entry with the same lease
 * length shares one), each with its own keep-alive (ClientLease).
 */
export class Leases {
  private readonly bySeconds = new Map<number, ClientLease>()

  constructor(
    private readonly client: Etcd3,
    private readonly target: EtcdTarget,
    /** The lease ended (keep-alives failed past its ttl, or etcd revoked it): every key on it is gone. */
    private readonly onLost: (lease: ClientLease) => void,
  ) {}

  /** Every live lease: an attempt whose reply was lost may have put a key on any of them. */
  all(): ClientLease[] {
    return [...this.bySeconds.values()]
  }

  /**
   * The lease for holds of `ttlMs`. With a lock delay, it is longer by the
   * delay: a crashed client's keys then outlive the end of its holds by it.
   */
  async leaseFor(ttlMs: number, lockDelayMs = 0): Promise<ClientLease> {
    const delaySeconds = lockDelayMs > 0 ? lockDelaySeconds(lockDelayMs) : 0
    const seconds = leaseSecondsFor(ttlMs) + delaySeconds
    let lease = this.bySeconds.get(seconds)
    if (!lease) {
      lease = new ClientLease(this.client.lease(seconds, { autoKeepAlive: false }), seconds, (l) => this.lost(l), async (id) => {
        const live = await this.client.leaseClient.leaseTimeToLive({ ID: id })
        return Number(live.grantedTTL)
      }, this.target.commandTimeoutMs, delaySeconds, async (id) => {
        await this.client.kv.put({ key: Buffer.from(delayMarkerKey(this.target, id)), value: Buffer.from(String(delaySeconds)), lease: id })
      })
      this.bySeconds.set(seconds, lease)
    }
    try {
      await lease.ready
    } catch (cause) {
      if (this.bySeconds.get(seconds) === lease) this.bySeconds.delete(seconds)
      // Granted, but its length could not be read: nobody keeps it alive, etcd ends it.
      lease.stop()
      throw await etcdDiagnosis(this.target, cause)
    }
    return lease
  }

  /** etcd said it no longer has this lease (a request on it was refused): as if its keep-alive had. */
  ended(lease: ClientLease): void {
    lease.stop()
    this.lost(lease)
  }

  private lost(lease: ClientLease): void {
    if (this.bySeconds.get(lease.seconds) === lease) this.bySeconds.delete(lease.seconds)
    this.onLost(lease)
  }

  /** No more keep-alives: holds stay until their lease runs out, like any client that goes away. */
  stopAll(): void {
    for (const lease of this.bySeconds.values()) lease.stop()
    this.bySeconds.clear()
  }
}

/**
 * The lease asked for a hold of `ttlMs`: the ttl rounded up to whole seconds,
 * so that a crashed client's holds end within their ttl (docs/election.md).
 * Keep-alives go every third of it; the client counts a hold only as far as
 * the last acknowledged keep-alive covers it (ttlLeft). etcd may grant more
 * (its floor); the grant is read back, shown by inspect(), and used for the
 * ttl reported to the core.
 */
export function leaseSecondsFor(ttlMs: number): number {
  return Math.max(ETCD_MIN_LEASE_SECONDS, Math.ceil(ttlMs / 1000))
}

/**
 * The key that marks lease `id` (decimal) as one with a lock delay: its value
 * is the delay in seconds, the last part of the lease (or ALL_DELAY). It rides on the lease
 * itself, so it lives exactly as long. A key on such a lease is a phantom once
 * the lease is within its delay of its end (see isPhantom). Outside every
 * name's line (no name starts with a NUL), and never read as one by list().
 */
export function delayMarkerKey(target: EtcdTarget, id: string): string {
  return `${target.keyPrefix}\u0000baton/lock-delay.${BigInt(id).toString(16)}`
}

/** The marker of a lease that is all lock delay (an expired hold's key moved to it): however long etcd made it. */
export const ALL_DELAY = 'all'

export function delayOfMarker(stored: string | undefined): number {
  if (stored === ALL_DELAY) return Infinity
  const seconds = Number(stored ?? 0)
  return Number.isInteger(seconds) && seconds > 0 ? seconds : 0
}

/** A lease as inspect() reads it: seconds granted and left (etcd rounds down), and its lock delay (0 for none). */
export interface LeaseLife {
  readonly granted: number
  readonly left: number
  readonly delay: number
}

/**
 * A key on this lease is an expired hold's phantom: the lease is within its
 * lock delay of its end. A live client renews it every third of its holds'
 * part, so that happens only when its holds have run out unrenewed (a
 * crashed or cut-off client), or when the key was moved to a lease that is
 * all delay (keepForLockDelay).
 */
export function isPhantom(life: LeaseLife | undefined): boolean {
  return life !== undefined && life.delay > 0 && life.left < life.delay
}

/** etcd leases count whole seconds (and etcd may raise them to its floor): a delay is never cut short. */
export function lockDelaySeconds(lockDelayMs: number): number {
  return Math.max(1, Math.ceil(lockDelayMs / 1000))
}

import { randomBytes } from 'node:crypto'
import { type Driver, type HoldRef, invalidArgument, isReservedName, type LockSpec, MAX_DURATION_MS, RESERVED_NAME_PREFIX, validateName } from '../internal-api.js'
import type { LeaseIds } from './lease-id.js'

/** The server's own names: no route takes them and no list shows them. One is used: the hold that keeps the lease secret. */
export const RESERVED_PREFIX = RESERVED_NAME_PREFIX
export const LEASE_SECRET_NAME = `${RESERVED_PREFIX}lease-secret`

/** A lock name from a request: a valid name, and not one of the server's own. */
export function requestName(name: unknown): string {
  const checked = validateName(name)
  if (checked.startsWith(RESERVED_PREFIX)) throw invalidArgument(`names under "${RESERVED_PREFIX}" are reserved for the lock server itself`)
  return checked
}

export const isReserved = isReservedName

/** A new random secret: 256 bits, base64url (43 characters). */
export const newSecret = (): string => randomBytes(32).toString('base64url')
const SECRET_TEXT = /^[A-Za-z0-9_-]{43}$/

const SPEC: LockSpec = { name: LEASE_SECRET_NAME, kind: 'mutex', mode: 'exclusive', fair: false, permits: 1, lockDelayMs: 0 }
/** How often the keeper renews the hold, and another server looks whether the secret is still held. */
const REFRESH_MS = 60_000
const DAY_MS = 24 * 60 * 60_000
/**
 * The hold's ttl on a store that refuses a long one (ZooKeeper: no hold
 * outlives the longest session the ensemble grants, 60 s by default). It is
 * renewed, and looked at by the other servers, three times per ttl.
 */
const SHORT_TTL_MS = 30_000

/**
 * The lease secret of servers that share a store and were given none: kept
 * in the store itself, as the value of a hold on a reserved name, so that
 * every server of the store reads the same one and a server of another
 * store has another.
 *
 * Why a hold and not a new driver call: every store that offers leader
 * election already keeps a value beside a hold, atomically with the grant,
 * and shows it to inspect (docs/election.md). Mutual exclusion settles a
 * race of servers starting together: the one granted plants its random
 * secret, the others read the holder's. Nothing new is asked of the eight
 * drivers, and a store that keeps no value (Redlock) says so (`conflict`):
 * the server then uses a secret of its own process and says to give
 * `--lease-secret` for servers to share.
 *
 * The hold lives long (a day, or the longest lease the caps allow if that is
 * more) and is renewed every minute by whichever server holds it; the others
 * look every minute and take it over with the same value once it is free.
 * It is never released, not even at shutdown: a rolling restart of the only
 * server keeps the secret, so the ids its clients hold stay good. Only when
 * every server of the store is gone for longer than the hold's ttl (or the
 * store loses it: a Redis without persistence restarting, an etcd or
 * ZooKeeper session ending) is a new one made; every lease under the old one
 * has ended by then, or lives in the store no longer.
 *
 * Who can read the secret: only clients of the store itself (with the
 * store's own credentials), which can change any lock anyway. The lock
 * server refuses every route on reserved names and leaves them out of lists.
 */
export class StoreSecret {
  private hold: HoldRef | undefined
  private timer: NodeJS.Timeout | undefined
  private closed = false
  /** Whether the store keeps the secret (false: this process's own, until the store answers). */
  shared = false

  private constructor(
    private readonly driver: Driver,
    private readonly ids: LeaseIds,
    private secret: string,
    private readonly owner: string,
    private ttlMs: number,
  ) {}

  /**
   * Reads the store's secret, or plants `candidate` as it. `longestLeaseMs`:
   * the longest ttl and lock delay this server allows (the hold outlives them).
   */
  static async open(driver: Driver, ids: LeaseIds, candidate: string, clientId: string, longestLeaseMs: number): Promise<StoreSecret> {
    const owner = `${clientId}.${randomBytes(16).toString('base64url').slice(0, 22)}`
    const ttlMs = Math.min(MAX_DURATION_MS, Math.max(DAY_MS, 2 * longestLeaseMs))
    const keeper = new StoreSecret(driver, ids, candidate, owner, ttlMs)
    await keeper.refresh()
    keeper.schedule()
    return keeper
  }

  private schedule(): void {
    clearInterval(this.timer)
    if (this.closed) return
    this.timer = setInterval(() => void this.refresh(), Math.min(REFRESH_MS, Math.floor(this.ttlMs / 3)))
    this.timer.unref()
  }

  /** Stops renewing; the hold is left to run out (see above). */
  close(): void {
    this.closed = true
    clearInterval(this.timer)
  }

  /** Refusals and store errors are not fatal: ids minted meanwhile stay good after a rekey. */
  private async refresh(): Promise<void> {
    try {
      if (this.hold) {
        const [result] = await this.driver.extend([this.hold], this.ttlMs)
        if (result?.status === 'extended') return
        this.hold = undefined
      }
      for (let attempt = 0; attempt < 3 && !this.closed; attempt++) {
        const answer = await this.driver.acquire({
          ...SPEC, owner: this.owner, ttlMs: this.ttlMs, enqueue: false, queueTtlMs: 1000, retry: attempt > 0, value: this.secret,
        })
        if (answer.status === 'conflict') {
          // A store that refuses so long a ttl gets a short one, renewed more
          // often; one that refuses even that keeps no values (Redlock).
          if (this.ttlMs <= SHORT_TTL_MS) return
          this.ttlMs = SHORT_TTL_MS
          this.schedule()
          attempt--
          continue
        }
        if (answer.status === 'granted') {
          this.hold = { ...SPEC, owner: this.owner, token: answer.token }
          return this.adopt(this.secret)
        }
        const value = (await this.driver.inspect(LEASE_SECRET_NAME))?.holders[0]?.value
        if (value !== undefined && SECRET_TEXT.test(value)) return this.adopt(value)
        // Released or ran out between the two calls: try again.
      }
    } catch {
      // The store does not answer, or keeps no values (a baton server behind http://): the next refresh tries again.
    }
  }

  private adopt(secret: string): void {
    this.shared = true
    if (secret === this.secret) return
    this.secret = secret
    this.ids.rekey(secret)
  }
}

import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { monotonicNow } from '../core/clock.js'
import { invalidArgument } from '../core/errors.js'

/** Tokens reserved per fsync: the hot path writes to disk once per this many grants. */
const TOKEN_BLOCK = 100_000n
/** How far ahead the "every lease ends by" mark is pushed, so it is rewritten at most this often under load. */
const END_SLACK_MS = 10_000
/** How often the mark is brought down to the leases that can still be live. */
const LOWER_EVERY_MS = 1000

interface State {
  /** Every token granted so far is at most this. */
  tokensReserved: string
  /** Epoch ms by which every lease this store granted has ended (ttl and lock delay). */
  leasesEndBy: number
  /** The longest ttl + lock delay ever granted: bounds the wait after a restart whatever the wall clock did. */
  longestLeaseMs: number
  /** The lease secret of this server (lease-id.ts), when the operator gave none: ids stay good across a restart. */
  leaseSecret?: string
}

/**
 * What the embedded store keeps in --data-dir so that a restarted server
 * stays safe without persisting its leases:
 * - fencing tokens come from one counter for all names, and the counter's
 *   high-water mark is reserved on disk (fsynced) a block ahead, so after a
 *   restart (kill -9 included) tokens continue above anything granted before;
 * - the server refuses grants until every lease it could have granted before
 *   the restart has run out: until `leasesEndBy` (a wall-clock mark pushed
 *   ahead and fsynced before any grant that would end later), and never
 *   longer than `longestLeaseMs` from start-up (in case the wall clock jumped).
 */
export class DataDir {
  private readonly file: string
  private state: State
  private next: bigint
  private reserved: bigint
  /** Monotonic instant before which grants are refused (0: none). */
  readonly grantsFrom: number
  private lowering: NodeJS.Timeout | undefined
  private latestEnd: (() => number) | undefined

  constructor(dir: string) {
    try {
      mkdirSync(dir, { recursive: true })
    } catch (cause) {
      throw invalidArgument(`--data-dir ${dir} can not be created: ${(cause as Error).message}`)
    }
    this.file = join(dir, 'baton-state.json')
    const previous = readState(this.file)
    this.state = previous ?? { tokensReserved: '0', leasesEndBy: 0, longestLeaseMs: 0 }
    this.next = BigInt(this.state.tokensReserved)
    this.reserved = this.next
    const waitMs = previous ? Math.max(0, Math.min(previous.longestLeaseMs, previous.leasesEndBy - Date.now())) : 0
    this.grantsFrom = waitMs > 0 ? monotonicNow() + waitMs + 1 : 0
    this.reserve()
  }

  /** The lease secret kept here, made (and written) on first use. */
  leaseSecret(make: () => string): string {
    if (this.state.leaseSecret === undefined) {
      this.state.leaseSecret = make()
      this.write()
    }
    return this.state.leaseSecret
  }

  /** Milliseconds until grants are allowed (0 when they are). */
  restartDelayLeftMs(): number {
    return Math.max(0, Math.ceil(this.grantsFrom - monotonicNow()))
  }

  /** The token source of the embedded store: one increasing counter for every name. */
  readonly nextToken = (last: bigint): bigint => {
    if (this.next < last) this.next = last
    this.next += 1n
    if (this.next > this.reserved) this.reserve()
    return this.next
  }

  /** Called before a grant or extend of `leaseMs` (ttl + lock delay) is answered. */
  noteLease(leaseMs: number): void {
    const endsAt = Date.now() + leaseMs
    if (endsAt <= this.state.leasesEndBy && leaseMs <= this.state.longestLeaseMs) return
    this.state.leasesEndBy = Math.max(this.state.leasesEndBy, endsAt + Math.min(END_SLACK_MS, leaseMs))
    this.state.longestLeaseMs = Math.max(this.state.longestLeaseMs, leaseMs)
    this.write()
  }

  /**
   * Follows the leases that can still be live: `latestEnd` answers the epoch
   * ms by which every lease the store holds now (and every lock delay after
   * an expiry) has ended, 0 when none. The mark only ever needs to cover
   * those, so a released lease (or one that ran out) stops counting within a
   * second, and a restart waits for what can still be held, not for the
   * longest lease ever written.
   */
  follow(latestEnd: () => number): void {
    this.latestEnd = latestEnd
    this.lowering = setInterval(() => this.lower(), LOWER_EVERY_MS)
    this.lowering.unref()
  }

  /** Writes the mark of the leases live at shutdown (they run to their ttl) and stops following. */
  close(): void {
    clearInterval(this.lowering)
    this.lowering = undefined
    this.lower()
  }

  private lower(): void {
    if (!this.latestEnd) return
    const now = Date.now()
    const end = this.latestEnd()
    if (end <= now) {
      // Nothing can be held: down to nothing, so a restart waits for nothing.
      if (this.state.leasesEndBy <= now) return
      this.state.leasesEndBy = 0
      this.state.longestLeaseMs = 0
    } else {
      const endBy = end + END_SLACK_MS
      // Lowered by more than the slack only: a busy store does not rewrite the file every second.
      if (this.state.leasesEndBy <= endBy + END_SLACK_MS) return
      this.state.leasesEndBy = endBy
      this.state.longestLeaseMs = Math.min(this.state.longestLeaseMs, endBy - now)
    }
    this.write()
  }

  private reserve(): void {
    this.reserved = this.next + TOKEN_BLOCK
    this.state.tokensReserved = this.reserved.toString()
    this.write()
  }

  private write(): void {
    const temp = `${this.file}.tmp`
    // Owner-only: it may hold the lease secret.
    writeFileSync(temp, JSON.stringify(this.state), { mode: 0o600 })
    const fd = openSync(temp, 'r')
    try {
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    renameSync(temp, this.file)
    const dirFd = openSync(join(this.file, '..'), 'r')
    try {
      fsyncSync(dirFd)
    } finally {
      closeSync(dirFd)
    }
  }
}

function readState(file: string): State | undefined {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw invalidArgument(`the state file ${file} can not be read: ${(error as Error).message}`)
  }
  try {
    const state = JSON.parse(text) as State
    if (!/^\d+$/.test(state.tokensReserved) || !Number.isFinite(state.leasesEndBy) || !Number.isFinite(state.longestLeaseMs) ||
      (state.leaseSecret !== undefined && (typeof state.leaseSecret !== 'string' || state.leaseSecret.length < 16))) throw new Error('bad fields')
    return state
  } catch (cause) {
    throw invalidArgument(`the state file ${file} is damaged (${(cause as Error).message}); move it away only if no lease of the old server can still be held`)
  }
}

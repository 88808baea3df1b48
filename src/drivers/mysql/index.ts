import { inspect } from 'node:util'
// The package's root, not mysql2/promise: the CLI bundle places packages by their root name.
import mysql from 'mysql2'
import type { Pool, PoolConnection, ResultSetHeader } from 'mysql2/promise'
import type {
  AcquireRequest, AcquireResult, Capabilities, Driver, DriverFactory, DriverOptions, ExtendResult,
  HoldMode, HoldRef, HolderSummary, ListPage, LockInfo, LockKind, LockSpec, Wake,
} from '../../core/driver.js'
import { limitOf } from '../../core/list.js'
import { describeConflict, weightField, weightOf } from '../../core/compat.js'
import { admitsNow, nextToken, retryAfter, serveLine, takenSlots, type HoldRow, type LineRow } from '../../core/hold-table.js'
import type { StoreUrl } from '../../core/url.js'
import { WakeRoutes } from '../../core/wake-routes.js'
import { isTransient, mysqlTarget, storeError, type MysqlTarget } from './connection.js'
import { WakePoller } from './listener.js'
import { Bell, bellName } from './bell.js'
import { Sweeper } from '../sql-common/sweeper.js'
import { ensureSchema } from './schema.js'
import { mysqlSql, type SqlSet, type Statement } from './sql.js'

const CAPABILITIES: Capabilities = {
  fair: true, rwlock: true, semaphore: true, lockDelay: true, handoff: true, durableTokens: true,
}

/** Names per page of list(). */
const LIST_PAGE = 500
/** Most idle names one sweep looks at; a full batch runs the next sweep at once. */
const SWEEP_BATCH = 1000
/** Attempts of a transaction InnoDB gave up to break a deadlock (nothing of it was applied). */
const TRANSIENT_ATTEMPTS = 5
const US = 1000


interface NameRow { kind: LockKind; fair: number; permits: number; last_token: string; now_us: string }
interface HoldRecord { owner: Buffer; mode: HoldMode; weight: number; token: string; expires_at: string; blocked_until: string; description: string | null; since: string; value: string | null }
interface LineRecord { owner: Buffer; mode: HoldMode; weight: number; ttl_ms: number; lock_delay_ms: number; stale_at: string; description: string | null; since: string; value: string | null }

interface Hold extends HoldRow { description: string | null; since: number; value: string | null }
interface Entry extends LineRow { staleAt: number; ttlMs: number; lockDelayMs: number; description: string | null; since: number; value: string | null }

/** What one operation found under the name's row lock; changed in place as it grants and drops. */
interface NameState {
  readonly name: string
  kind: LockKind
  fair: boolean
  permits: number
  lastToken: bigint
  /** The database clock, µs, read once after the lock was granted. */
  readonly now: number
  holds: Hold[]
  line: Entry[]
  /** Wake-ups to write before the commit: [client id, message]. */
  readonly wakes: [string, string][]
}

/**
 * MySQL / MariaDB. Leases are rows whose expiry is the database clock; each
 * operation is one transaction on a pooled connection that first takes the
 * name's InnoDB row lock (so one name's operations run one after another)
 * and then applies the grant rules of src/core/hold-table.ts to the rows it
 * read. A release hands the name to the next in line in the same
 * transaction and leaves that waiter's client a wake-up row, which the
 * client's poller reads (no LISTEN/NOTIFY here; listener.ts).
 */
export class MysqlDriver implements Driver {
  readonly store = 'mysql'
  readonly capabilities = CAPABILITIES
  private readonly routes = new WakeRoutes()
  private readonly poller: WakePoller
  /** This client's doorbell, rung after each of its transactions that left wake-ups. */
  private readonly bell: Bell
  /** Names our owners wait for (their last attempt was busy), by owner: the poller waits on a holder's bell. */
  private readonly waitingOn = new Map<string, string>()
  /** Owners watched now: the poller runs while there are any (or observers). */
  private watching = 0
  private readonly observers = new Map<string, Set<() => void>>()
  private readonly sweeper: Sweeper
  private closed = false

  constructor(
    private readonly pool: Pool,
    private readonly target: MysqlTarget,
    private readonly sql: SqlSet,
    private readonly options: DriverOptions,
  ) {
    this.poller = new WakePoller(target.connection, options.clientId, sql, options.commandTimeoutMs, {
      onMessage: (message) => this.routes.dispatch(message),
      onChange: (name) => {
        for (const each of this.observers.get(name) ?? []) each()
      },
      // Wake-ups that arrived while the connection was down were kept (they are rows); look again anyway.
      onReconnect: () => {
        this.routes.nudgeAll()
        for (const set of this.observers.values()) for (const each of set) each()
      },
      wanted: () => this.watching > 0 || this.observers.size > 0,
      observed: () => [...this.observers.keys()],
      waitedNames: () => [...new Set(this.waitingOn.values())],
    })
    this.sweeper = new Sweeper(options.fenceTtlMs, () => this.sweep())
    this.bell = new Bell(target.connection, bellName(options.clientId))
  }

  async start(): Promise<void> {
    await this.bell.start()
    this.sweeper.start()
  }

  async acquire(request: AcquireRequest): Promise<AcquireResult> {
    const result = await this.attempt(request)
    // An owner that waits in line: the poller waits on the bell of the name's holder.
    if (result.status === 'busy' && request.enqueue) this.waitingOn.set(request.owner, request.name)
    else this.waitingOn.delete(request.owner)
    return result
  }

  private async attempt(request: AcquireRequest): Promise<AcquireResult> {
    return this.transaction(async (tx) => {
      tx.write('lock-name', [request.name, request.kind, request.fair, request.permits])
      const state = await this.readState(tx, request.name)
      const now = state.now
      // A hand-over may be due before anything else (a lease or lock delay ran out, a stale head).
      await this.serve(tx, state)
      if (state.holds.some((h) => h.blockedUntil <= now)) {
        tx.write('drop-past-holds', [request.name, now])
        state.holds = state.holds.filter((h) => h.blockedUntil > now)
      }

      const inUse = state.holds.length > 0 || state.line.some((w) => w.staleAt > now)
      if (state.kind !== request.kind || state.permits !== request.permits || state.fair !== request.fair) {
        const conflict = inUse ? describeConflict(state, request) : undefined
        if (conflict) {
          await this.writeWakes(tx, state)
          return { status: 'conflict', detail: conflict }
        }
        if (!inUse) {
          tx.write('set-kind', [request.kind, request.fair, request.permits, request.name])
          Object.assign(state, { kind: request.kind, fair: request.fair, permits: request.permits })
        }
      }

      const mine = state.holds.find((h) => h.owner === request.owner && h.expiresAt > now)
      if (mine) {
        await this.writeWakes(tx, state)
        return { status: 'granted', token: mine.token, ttlMs: Math.max(0, Math.floor((mine.expiresAt - now) / US)) }
      }
      const weight = request.kind === 'semaphore' ? weightOf(request) : 1
      const taken = takenSlots(state.holds, now)
      if (admitsNow(taken, state.line, { owner: request.owner, mode: request.mode, weight, fair: request.fair }, state.permits, now)) {
        const token = await this.grant(tx, state, {
          owner: request.owner, mode: request.mode, weight, ttlMs: request.ttlMs, lockDelayMs: request.lockDelayMs,
          description: request.description ?? null, value: request.value ?? null,
        })
        await this.writeWakes(tx, state)
        return { status: 'granted', token, ttlMs: request.ttlMs }
      }

      if (request.enqueue) {
        const staleAt = now + Math.ceil(request.queueTtlMs) * US
        const queued = state.line.find((w) => w.owner === request.owner)
        if (queued) {
          tx.write('refresh-entry', [staleAt, request.name, request.owner])
          queued.staleAt = staleAt
        } else {
          tx.write('enqueue', [
            request.name, request.owner, request.mode, weight, request.ttlMs, request.lockDelayMs, staleAt,
            request.description ?? null, Math.floor(now / US), request.value ?? null,
          ])
          state.line.push({
            owner: request.owner, mode: request.mode, weight, staleAt, ttlMs: request.ttlMs, lockDelayMs: request.lockDelayMs,
            description: request.description ?? null, since: Math.floor(now / US), value: request.value ?? null,
          })
        }
      }
      await this.writeWakes(tx, state)
      const wait = retryAfter(taken, state.line, request.owner, Math.ceil(request.queueTtlMs) * US, now)
      const first = [...state.holds].filter((h) => h.expiresAt > now).sort((a, b) => a.expiresAt - b.expiresAt)[0]
      return { status: 'busy', retryAfterMs: Math.max(1, Math.ceil(wait / US)), ...(first ? { holder: summary(first) } : {}) }
    })
  }

  async extend(holds: readonly HoldRef[], ttlMs: number): Promise<ExtendResult[]> {
    if (holds.length === 0) return []
    const keys = holds.map((h) => [h.name, h.owner, h.token.toString()])
    const renewed = await this.transaction(async (tx) => {
      const live = await tx.read<{ name: Buffer; owner: Buffer; token: string; now_us: string }>('live-holds', [keys])
      if (live.length === 0) return new Set<string>()
      const now = Number(live[0]!.now_us)
      const found = live.map((r) => [r.name.toString('utf8'), r.owner.toString('utf8'), r.token])
      tx.write('renew', [now + ttlMs * US, now + ttlMs * US, found])
      return new Set(found.map((k) => k.join('\u0000')))
    })
    return keys.map((k) => (renewed.has(k.join('\u0000')) ? { status: 'extended', ttlMs } : { status: 'lost' }))
  }

  async release(hold: HoldRef | (LockSpec & { owner: string })): Promise<boolean> {
    this.waitingOn.delete(hold.owner)
    const token = 'token' in hold ? hold.token.toString() : null
    return this.transaction(async (tx) => {
      const state = await this.lockExisting(tx, hold.name)
      if (!state) return false
      const result = await tx.exec('release-hold', [hold.name, hold.owner, state.now, token, token])
      const released = result.affectedRows > 0
      if (released) {
        state.holds = state.holds.filter((h) => h.owner !== hold.owner)
        // Another client's hold (a lock server releasing a lease another server granted): its client is told.
        if (!hold.owner.startsWith(`${this.options.clientId}.`)) state.wakes.push([clientOf(hold.owner), `d|${hold.owner}`])
      } else if (state.line.some((w) => w.owner === hold.owner)) {
        tx.write('leave-line', [hold.name, [hold.owner]])
        state.line = state.line.filter((w) => w.owner !== hold.owner)
      } else {
        return false
      }
      tx.write('touch', [state.now, hold.name])
      await this.serve(tx, state)
      await this.writeWakes(tx, state)
      return released
    })
  }

  async downgrade(hold: HoldRef): Promise<boolean> {
    return this.transaction(async (tx) => {
      const state = await this.lockExisting(tx, hold.name)
      if (!state) return false
      const result = await tx.exec('downgrade', [hold.name, hold.owner, hold.token.toString(), state.now])
      if (result.affectedRows === 0) return false
      state.holds = state.holds.map((h) => (h.owner === hold.owner ? { ...h, mode: 'read' } : h))
      tx.write('touch', [state.now, hold.name])
      await this.serve(tx, state)
      await this.writeWakes(tx, state)
      return true
    })
  }

  async proclaim(hold: HoldRef, value: string): Promise<boolean> {
    return this.transaction(async (tx) => {
      const [row] = await tx.read<NameRow>('read-name', [hold.name])
      if (!row) return false
      const result = await tx.exec('proclaim', [value, hold.name, hold.owner, hold.token.toString(), row.now_us])
      if (result.affectedRows === 0) return false
      tx.write('touch', [row.now_us, hold.name])
      return true
    })
  }

  watch(_name: string, owner: string, onWake: (wake: Wake) => void): () => void {
    const unwatch = this.routes.watch(owner, onWake)
    this.watching++
    this.poller.kick()
    let done = false
    return () => {
      if (done) return
      done = true
      this.watching--
      this.waitingOn.delete(owner)
      unwatch()
    }
  }

  /**
   * Election observers: the poller reads the change counter of every
   * observed name (bumped by each grant, release, hand-over, proclaim and
   * forced release) and tells the name's observers when it moved; its first
   * read, and a reconnect, tell them once in any case.
   */
  observe(name: string, onChange: () => void): () => void {
    let set = this.observers.get(name)
    if (!set) {
      this.observers.set(name, (set = new Set()))
      this.poller.forget(name)
    }
    const mine = () => onChange()
    set.add(mine)
    this.poller.kick(true)
    return () => {
      set.delete(mine)
      if (set.size === 0 && this.observers.get(name) === set) this.observers.delete(name)
    }
  }

  async inspect(name: string): Promise<LockInfo | null> {
    const [info] = await this.snapshot(async (tx) => {
      const names = await tx.read<InfoName>('info-name', [name])
      return this.infos(tx, names)
    })
    return info ?? null
  }

  /** The table's own order (name is VARBINARY: byte order), from the cursor, LIMIT the page. */
  async *list(prefix: string, page?: ListPage): AsyncIterable<LockInfo> {
    const pattern = Buffer.from(prefix.replace(/[\\%_]/g, '\\$&') + '%')
    let after: Buffer = Buffer.from(page?.after ?? '')
    let left = limitOf(page)
    while (left > 0) {
      const size = Math.min(LIST_PAGE, left)
      const { infos, rows, last } = await this.snapshot(async (tx) => {
        const names = await tx.read<InfoName>('info-names', [pattern, after, size])
        return { infos: await this.infos(tx, names), rows: names.length, last: names.at(-1)?.name }
      })
      for (const info of infos) {
        if (left <= 0) return
        left--
        yield info
      }
      if (rows < size || !last) return
      after = last
    }
  }

  async forceRelease(name: string): Promise<boolean> {
    return this.transaction(async (tx) => {
      const state = await this.lockExisting(tx, name)
      if (!state) return false
      tx.write('drop-all', [name, name])
      let dropped = 0
      for (const hold of state.holds) {
        // A lock-delay leftover (expired, still blocking) counts as freed, as on every store; its owner is not told.
        if (hold.expiresAt <= state.now) {
          if (hold.blockedUntil > state.now) dropped++
          continue
        }
        dropped++
        state.wakes.push([clientOf(hold.owner), `l|${hold.owner}|released by force (forceRelease)`])
      }
      for (const entry of state.line) if (entry.staleAt > state.now) state.wakes.push([clientOf(entry.owner), `r|${entry.owner}`])
      tx.write('touch', [state.now, name])
      await this.writeWakes(tx, state)
      return dropped > 0
    })
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.sweeper.stop()
    this.routes.clear()
    this.observers.clear()
    await Promise.allSettled([this.poller.close(), this.bell.close(), this.pool.end()])
  }

  /** util.inspect(baton) must show neither the password nor the pool's settings. */
  [inspect.custom](): string {
    return `MysqlDriver { ${this.target.display} }`
  }

  /** The name's row locked (created if missing), its holds and line, and the clock. */
  private async readState(tx: Tx, name: string): Promise<NameState> {
    const state = await this.lockExisting(tx, name)
    if (!state) throw new Error(`the row of "${name}" vanished under its lock`)
    return state
  }

  /** As readState, for operations on a name that may not exist (nothing to do then); one round trip. */
  private async lockExisting(tx: Tx, name: string): Promise<NameState | undefined> {
    const [names, holds, line] = await tx.readMany([['read-name', [name]], ['read-holds', [name]], ['read-line', [name]]])
    const row = (names as NameRow[])[0]
    if (!row) return undefined
    return {
      name, kind: row.kind, fair: Boolean(row.fair), permits: row.permits, lastToken: BigInt(row.last_token),
      now: Number(row.now_us), holds: (holds as HoldRecord[]).map(holdOf), line: (line as LineRecord[]).map(entryOf), wakes: [],
    }
  }

  /** Hands the name to the head of the line while it fits; each new holder's client gets a wake-up row. */
  private async serve(tx: Tx, state: NameState): Promise<void> {
    if (state.line.length === 0) return
    const { grant, drop } = serveLine(takenSlots(state.holds, state.now), state.line, state.permits, state.now)
    const served = [...drop, ...grant]
    if (served.length === 0) return
    tx.write('leave-line', [state.name, served.map((w) => w.owner)])
    state.line = state.line.filter((w) => !served.includes(w))
    for (const entry of grant) {
      const token = await this.grant(tx, state, entry)
      state.wakes.push([clientOf(entry.owner), `g|${entry.owner}|${token}|${entry.ttlMs}`])
    }
  }

  private async grant(
    tx: Tx, state: NameState,
    who: { owner: string; mode: HoldMode; weight: number; ttlMs: number; lockDelayMs: number; description: string | null; value: string | null },
  ): Promise<bigint> {
    const token = nextToken(state.lastToken, state.now)
    state.lastToken = token
    const expiresAt = state.now + who.ttlMs * US
    const blockedUntil = expiresAt + who.lockDelayMs * US
    tx.write('grant', [token.toString(), state.now, state.name])
    tx.write('insert-hold', [
      state.name, who.owner, who.mode, who.weight, token.toString(), expiresAt, who.lockDelayMs, blockedUntil,
      who.description, Math.floor(state.now / US), who.value,
    ])
    state.holds = state.holds.filter((h) => h.owner !== who.owner)
    state.holds.push({
      owner: who.owner, mode: who.mode, weight: who.weight, token, expiresAt, blockedUntil,
      description: who.description, since: Math.floor(state.now / US), value: who.value,
    })
    return token
  }

  private async writeWakes(tx: Tx, state: NameState): Promise<void> {
    if (state.wakes.length === 0) return
    tx.write('wake', [state.wakes.map(([client, message]) => [client, message, state.now])])
  }

  /** Holders and waiters of the names read, from the same snapshot; names nobody uses are left out. */
  private async infos(tx: Tx, names: InfoName[]): Promise<LockInfo[]> {
    if (names.length === 0) return []
    const list = names.map((n) => n.name)
    const [holdRows, lineRows] = await tx.readMany([['info-holds', [list]], ['info-line', [list]]])
    const holds = holdRows as (HoldRecord & { name: Buffer })[]
    const line = lineRows as (LineRecord & { name: Buffer })[]
    const infos: LockInfo[] = []
    for (const row of names) {
      const now = Number(row.now_us)
      const name = row.name.toString('utf8')
      const mine = holds.filter((h) => h.name.equals(row.name)).map(holdOf)
      const waiting = line.filter((l) => l.name.equals(row.name)).map(entryOf).filter((w) => w.staleAt > now)
      if (!mine.some((h) => h.blockedUntil > now) && waiting.length === 0) continue
      infos.push({
        name, kind: row.kind, fair: Boolean(row.fair), permits: row.permits,
        holders: mine.filter((h) => h.expiresAt > now).map(summary),
        waiters: waiting.map((w) => ({ owner: w.owner, mode: w.mode, ...weightField(w.mode, w.weight), ...who(w) })),
        lastToken: BigInt(row.last_token),
      })
    }
    return infos
  }

  /**
   * One operation: one transaction on one pooled connection, its statements
   * sent together wherever no answer is needed in between (the opening
   * reads in one round trip, the writes with the COMMIT in another). A
   * transaction InnoDB rolled back to break a deadlock (or whose row lock
   * wait timed out) applied nothing, and is run again.
   */
  private async transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const connection = await this.connection()
      const tx = new Tx(connection, this.sql, this.options.commandTimeoutMs, ['START TRANSACTION'])
      try {
        const result = await work(tx)
        await tx.commit()
        connection.release()
        if (tx.wroteWakes) this.bell.ring()
        return result
      } catch (cause) {
        if (isTransient(cause) && attempt < TRANSIENT_ATTEMPTS) {
          const clean = await connection.query('ROLLBACK').then(() => true, () => false)
          if (clean) connection.release()
          else connection.destroy()
          continue
        }
        // Its state is unknown (a reply lost, a timeout): never handed out again.
        connection.destroy()
        throw storeError(this.target, cause)
      }
    }
  }

  /** A read-only transaction on one consistent snapshot (inspect, list). */
  private async snapshot<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    const connection = await this.connection()
    const tx = new Tx(connection, this.sql, this.options.commandTimeoutMs, [
      'SET TRANSACTION ISOLATION LEVEL REPEATABLE READ', 'START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY',
    ])
    try {
      const result = await work(tx)
      await tx.commit()
      connection.release()
      return result
    } catch (cause) {
      connection.destroy()
      throw storeError(this.target, cause)
    }
  }

  private async connection(): Promise<PoolConnection> {
    try {
      return await this.pool.getConnection()
    } catch (cause) {
      throw storeError(this.target, cause)
    }
  }

  /**
   * Bounded state: holds past their lock delay, stale line entries, and
   * names nobody held or awaited for ?fenceTtl= (their counters with them).
   * Like every operation, it locks the names first (skipping those in use).
   */
  private async sweep(): Promise<boolean> {
    return this.transaction(async (tx) => {
      const [clock] = await tx.read<{ now_us: string }>('clock')
      const then = Number(clock!.now_us)
      const candidates = await tx.read<{ name: Buffer }>('sweep-candidates', [then - this.options.fenceTtlMs * US, then, then, SWEEP_BATCH])
      if (candidates.length === 0) return false
      const locked = await tx.read<{ name: Buffer; now_us: string }>('sweep-lock', [candidates.map((c) => c.name)])
      if (locked.length === 0) return false
      const now = Number(locked[0]!.now_us)
      const names = locked.map((l) => l.name)
      tx.write('sweep-drop', [now, names, now, now, names, now, names, now, names, now - this.options.fenceTtlMs * US, now])
      return candidates.length >= SWEEP_BATCH
    })
  }
}

/**
 * The statements of one transaction. Writes whose answer nothing needs wait
 * and travel with the next read, or with the COMMIT: the lock rules need
 * two round trips per operation, not one per statement. Values only ever
 * travel as placeholders, escaped by mysql2's format.
 */
class Tx {
  /** Whether a wake-up row was written (the client's bell rings after the commit). */
  wroteWakes = false
  private pending: string[]
  private pendingCount: number

  constructor(
    private readonly connection: PoolConnection,
    private readonly sql: SqlSet,
    private readonly timeoutMs: number,
    opening: string[],
  ) {
    this.pending = [...opening]
    this.pendingCount = opening.length
  }

  write(statement: Statement, values: unknown[] = []): void {
    if (statement === 'wake') this.wroteWakes = true
    this.queue(statement, values)
  }

  async read<R>(statement: Statement, values: unknown[] = []): Promise<R[]> {
    const [rows] = await this.readMany([[statement, values]])
    return rows as R[]
  }

  /** A statement whose count of changed rows decides what comes next. */
  async exec(statement: Statement, values: unknown[] = []): Promise<ResultSetHeader> {
    const [header] = await this.readMany([[statement, values]])
    return header as unknown as ResultSetHeader
  }

  /** Sends what waits and these, in one round trip; the answers of these, in order. */
  async readMany(list: readonly [Statement, unknown[]][]): Promise<unknown[][]> {
    const ends: number[] = []
    for (const [statement, values] of list) {
      this.queue(statement, values)
      ends.push(this.pendingCount - 1)
    }
    const results = await this.flush()
    return ends.map((end) => results[end] as unknown[])
  }

  async commit(): Promise<void> {
    this.pending.push('COMMIT')
    this.pendingCount++
    await this.flush()
  }

  private queue(statement: Statement, values: unknown[]): void {
    this.pending.push(mysql.format(this.sql.statements[statement], values as Parameters<typeof mysql.format>[1]))
    this.pendingCount += this.sql.counts[statement]
  }

  /** Every answer of the round trip, one per statement. */
  private async flush(): Promise<unknown[]> {
    const text = this.pending.join(';\n')
    const count = this.pendingCount
    this.pending = []
    this.pendingCount = 0
    const [results] = await this.connection.query({ sql: text, timeout: this.timeoutMs })
    return count === 1 ? [results] : (results as unknown[])
  }
}

interface InfoName { name: Buffer; kind: LockKind; fair: number; permits: number; last_token: string; now_us: string }

function text(value: Buffer | string): string {
  return typeof value === 'string' ? value : value.toString('utf8')
}

function holdOf(row: HoldRecord): Hold {
  return {
    owner: text(row.owner), mode: row.mode, weight: Number(row.weight), token: BigInt(row.token),
    expiresAt: Number(row.expires_at), blockedUntil: Number(row.blocked_until),
    description: row.description, since: Number(row.since), value: row.value,
  }
}

function entryOf(row: LineRecord): Entry {
  return {
    owner: text(row.owner), mode: row.mode, weight: Number(row.weight), staleAt: Number(row.stale_at),
    ttlMs: Number(row.ttl_ms), lockDelayMs: Number(row.lock_delay_ms), description: row.description, since: Number(row.since), value: row.value,
  }
}

function summary(hold: Hold): HolderSummary {
  return {
    owner: hold.owner, token: hold.token, mode: hold.mode, ...weightField(hold.mode, hold.weight),
    expiresAt: Math.floor(hold.expiresAt / US), ...who(hold), ...(hold.value !== null ? { value: hold.value } : {}),
  }
}

/** The description and since of a hold or line entry. */
function who(entry: { description: string | null; since: number }): { description?: string; since: number } {
  return { ...(entry.description ? { description: entry.description } : {}), since: entry.since }
}

/** The client an owner belongs to: owners are "<client id>.<lease id>". */
function clientOf(owner: string): string {
  return owner.slice(0, owner.indexOf('.'))
}

export const createMysqlDriver: DriverFactory = async (url: StoreUrl, options: DriverOptions) => {
  const target = mysqlTarget(url, options)
  const sql = mysqlSql()
  const pool = mysql.createPool({ ...target.connection, connectionLimit: target.poolSize, waitForConnections: true, maxIdle: target.poolSize }).promise()
  // Every connection: UTC, so UNIX_TIMESTAMP(NOW(6)) is never ambiguous
  // (a DST fall-back hour), and READ COMMITTED, so reads under the name's
  // lock see the latest commits and InnoDB takes no gap locks.
  pool.pool.on('connection', (connection) => {
    connection.query("SET SESSION time_zone = '+00:00'; SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", () => {})
    connection.on('error', () => {})
  })
  try {
    await ensureSchema(pool, target, sql)
    const driver = new MysqlDriver(pool, target, sql, options)
    await driver.start()
    return driver
  } catch (cause) {
    await pool.end().catch(() => {})
    throw storeError(target, cause)
  }
}

import { inspect } from 'node:util'
import pg from 'pg'
import type {
  AcquireRequest, AcquireResult, Capabilities, Driver, DriverFactory, DriverOptions, ExtendResult,
  HoldMode, HoldRef, HolderSummary, ListPage, LockInfo, LockKind, LockSpec, Wake,
} from '../../core/driver.js'
import { describeConflict, weightField, weightOf } from '../../core/compat.js'
import type { StoreUrl } from '../../core/url.js'
import { WakeRoutes } from '../../core/wake-routes.js'
import { Observers } from '../../core/observers.js'
import { postgresTarget, storeError, type PostgresTarget } from './connection.js'
import { WakeListener } from './listener.js'
import { Sweeper } from '../sql-common/sweeper.js'
import { described, likePattern, pagesOf } from '../sql-common/info.js'
import { ensureSchema } from './schema.js'
import { sqlFor, type Operation, type SqlSet } from './sql.js'

const CAPABILITIES: Capabilities = {
  fair: true, rwlock: true, semaphore: true, lockDelay: true, handoff: true, durableTokens: true,
}

/** Most idle names one sweep drops; a full batch runs the next sweep at once. */
const SWEEP_BATCH = 1000

interface AcquireRow {
  status: 'granted' | 'busy' | 'conflict'
  token: string | null
  ms: string | null
  holder_owner: string | null
  holder_token: string | null
  holder_mode: HoldMode | null
  holder_expires_at: string | null
  kind: LockKind | null
  permits: number | null
}

interface InfoRow {
  name: string
  kind: LockKind
  fair: boolean
  permits: number
  last_token: string
  holders: { owner: string; token: string; mode: HoldMode; weight?: number; expiresAt: number; description?: string | null; since?: number | null; value?: string | null }[]
  waiters: { owner: string; mode: HoldMode; weight?: number; description?: string | null; since?: number | null }[]
}

/**
 * PostgreSQL. Leases are rows whose expiry is the database clock; each
 * operation is one statement (a PL/pgSQL function of the schema, or one
 * UPDATE) run on a pooled connection. A release hands the name to the next in
 * line in its own transaction and NOTIFYs that waiter's client only, on a
 * channel per client that one dedicated connection LISTENs on.
 */
export class PostgresDriver implements Driver {
  readonly store = 'postgres'
  readonly capabilities = CAPABILITIES
  private readonly routes = new WakeRoutes()
  /** pg_notify channel of a client: this prefix and its client id. */
  private readonly channelPrefix: string
  private readonly listener: WakeListener
  private readonly sweeper: Sweeper
  private closed = false

  constructor(
    private readonly pool: pg.Pool,
    private readonly target: PostgresTarget,
    private readonly sql: SqlSet,
    private readonly options: DriverOptions,
  ) {
    this.channelPrefix = `${target.schema}.wake.`
    this.sweeper = new Sweeper(options.fenceTtlMs, async () => {
      const [row] = await this.run<{ dropped: number }>('sweep', [options.fenceTtlMs, SWEEP_BATCH])
      return Number(row?.dropped) >= SWEEP_BATCH
    })
    this.listener = new WakeListener(
      target.client,
      this.channelPrefix + options.clientId,
      (payload) => this.routes.dispatch(payload),
      // Wake-ups sent while the connection was down are lost: let everyone look again.
      () => {
        this.routes.nudgeAll()
        this.observers.notifyAll()
      },
    )
  }

  /** Starts listening for wake-ups, and the sweep of idle names. */
  async start(): Promise<void> {
    await this.listener.start()
    this.sweeper.start()
  }

  async acquire(request: AcquireRequest): Promise<AcquireResult> {
    const [row] = await this.run<AcquireRow>('acquire', [
      request.name, request.owner, request.kind, request.mode, request.fair, request.permits, request.ttlMs,
      request.lockDelayMs, request.enqueue, Math.ceil(request.queueTtlMs), this.channelPrefix, request.description ?? '',
      String(request.kind === 'semaphore' ? weightOf(request) : 1),
      request.value === undefined ? '' : `v${request.value}`,
    ])
    if (!row) throw storeError(this.target, new Error('acquire returned no row'))
    if (row.status === 'granted') return { status: 'granted', token: BigInt(row.token!), ttlMs: Number(row.ms) }
    if (row.status === 'conflict') {
      const detail = describeConflict({ kind: row.kind!, permits: row.permits! }, request)
      if (detail) return { status: 'conflict', detail }
    }
    const holder: HolderSummary | undefined = row.holder_owner
      ? { owner: row.holder_owner, token: BigInt(row.holder_token!), mode: row.holder_mode!, expiresAt: Number(row.holder_expires_at) }
      : undefined
    return { status: 'busy', retryAfterMs: Number(row.ms ?? 1), ...(holder ? { holder } : {}) }
  }

  async extend(holds: readonly HoldRef[], ttlMs: number): Promise<ExtendResult[]> {
    if (holds.length === 0) return []
    const rows = await this.run<{ i: string }>('extend', [
      holds.map((h) => h.name), holds.map((h) => h.owner), holds.map((h) => h.token.toString()), ttlMs,
    ])
    const renewed = new Set(rows.map((r) => Number(r.i) - 1))
    return holds.map((_, i) => (renewed.has(i) ? { status: 'extended', ttlMs } : { status: 'lost' }))
  }

  async release(hold: HoldRef | (LockSpec & { owner: string })): Promise<boolean> {
    const token = 'token' in hold ? hold.token.toString() : null
    // Another client's hold (a lock server releasing a lease another server granted): its client is told.
    const foreign = hold.owner.startsWith(`${this.options.clientId}.`) ? '' : this.channelPrefix + hold.owner.slice(0, hold.owner.indexOf('.'))
    const [row] = await this.run<{ released: boolean }>('release', [hold.name, hold.owner, token, this.channelPrefix, foreign])
    return row?.released === true
  }

  async downgrade(hold: HoldRef): Promise<boolean> {
    const [row] = await this.run<{ done: boolean }>('downgrade', [hold.name, hold.owner, hold.token.toString(), this.channelPrefix])
    return row?.done === true
  }

  watch(_name: string, owner: string, onWake: (wake: Wake) => void): () => void {
    return this.routes.watch(owner, onWake)
  }

  async proclaim(hold: HoldRef, value: string): Promise<boolean> {
    const [row] = await this.run<{ done: boolean }>('proclaim', [hold.name, hold.owner, hold.token.toString(), value])
    return row?.done === true
  }

  /** Election observers by name; the listener LISTENs on "<schema>.leader" while there are any. */
  private readonly observers = new Observers()
  private leaderChannel: Promise<() => void> | undefined

  /**
   * Triggers on the holds table NOTIFY "<schema>.leader" with the name when
   * a hold carrying a value is granted, released, forced or proclaimed
   * (migrations/0004_election.sql); the listener's reconnect tells every
   * observer to look again.
   */
  observe(name: string, onChange: () => void): () => void {
    const remove = this.observers.add(name, onChange)
    if (!this.leaderChannel) {
      const listening = this.listener.listen(`${this.target.schema}.leader`, (payload) => this.observers.notify(payload))
      this.leaderChannel = listening
      // Listening now: what changed before is read once more.
      void listening.then(() => this.observers.notifyAll(), () => this.observers.notifyAll())
    }
    return () => {
      remove()
      if (this.observers.size > 0 || !this.leaderChannel) return
      const listening = this.leaderChannel
      this.leaderChannel = undefined
      void listening.then((unlisten) => unlisten(), () => {})
    }
  }

  async inspect(name: string): Promise<LockInfo | null> {
    const [row] = await this.run<InfoRow>('inspect', [name])
    return row ? infoOf(row) : null
  }

  /**
   * The tables' own order (names are COLLATE "C": byte order), from the
   * cursor, LIMIT the page; names are taken from the holds and the line
   * (sql/list.sql), so idle names cost nothing.
   */
  async *list(prefix: string, page?: ListPage): AsyncIterable<LockInfo> {
    const pattern = likePattern(prefix)
    yield* pagesOf(page, async (after, size) => {
      const rows = await this.run<ListRow>('list', [pattern, after, size])
      // A name whose last hold ended after the page was picked has no info: left out, the page goes on.
      const infos = rows.filter((row): row is ListRow & InfoRow => row.kind !== null).map(infoOf)
      return { infos, read: rows.length, last: rows.at(-1)?.page_name }
    })
  }

  async forceRelease(name: string): Promise<boolean> {
    const [row] = await this.run<{ dropped: number }>('force-release', [name, this.channelPrefix])
    return Number(row?.dropped ?? 0) > 0
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.sweeper.stop()
    this.routes.clear()
    this.observers.clear()
    await Promise.allSettled([this.listener.close(), this.pool.end()])
  }

  /** util.inspect(baton) must show neither the password nor the pool's settings. */
  [inspect.custom](): string {
    return `PostgresDriver { ${this.target.display} }`
  }

  private async run<R>(op: Operation, values: unknown[]): Promise<R[]> {
    const statement = this.sql.statements[op]
    if (values.length !== statement.params) throw new Error(`${op}.sql takes ${statement.params} parameters, given ${values.length}`)
    try {
      const result = await this.pool.query<R & pg.QueryResultRow>({ name: statement.name, text: statement.text, values })
      return result.rows
    } catch (cause) {
      throw storeError(this.target, cause)
    }
  }


}

/** A row of list.sql: the page's name, with its info, or nulls when it went idle in between. */
type ListRow = { page_name: string } & (InfoRow | { [K in keyof InfoRow]: null })

function infoOf(row: InfoRow): LockInfo {
  return {
    name: row.name,
    kind: row.kind,
    fair: row.fair,
    permits: row.permits,
    holders: row.holders.map((h) => ({
      owner: h.owner, token: BigInt(h.token), mode: h.mode, ...weightField(h.mode, h.weight), expiresAt: Number(h.expiresAt), ...described(h),
      ...(h.value !== null && h.value !== undefined ? { value: h.value } : {}),
    })),
    waiters: row.waiters.map((w) => ({ owner: w.owner, mode: w.mode, ...weightField(w.mode, w.weight), ...described(w) })),
    lastToken: BigInt(row.last_token),
  }
}

export const createPostgresDriver: DriverFactory = async (url: StoreUrl, options: DriverOptions) => {
  const target = postgresTarget(url, options)
  const sql = sqlFor(target.schema)
  const pool = new pg.Pool({ ...target.client, max: target.poolSize })
  // Idle connections that break are dropped by the pool; without a listener
  // their 'error' event would end the process.
  pool.on('error', () => {})
  try {
    await ensureSchema(pool, target, sql)
    const driver = new PostgresDriver(pool, target, sql, options)
    await driver.start()
    return driver
  } catch (cause) {
    await pool.end().catch(() => {})
    throw storeError(target, cause)
  }
}

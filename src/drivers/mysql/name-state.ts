import type { HoldMode, HolderSummary, LockKind } from '../../core/driver.js'
import { weightField } from '../../core/compat.js'
import { nextToken, serveLine, takenSlots, type HoldRow, type LineRow } from '../../core/hold-table.js'
import { described } from '../sql-common/info.js'
import type { Tx } from './tx.js'

/** The database clock counts µs; the driver interface, ms. */
export const US = 1000

export interface NameRow { kind: LockKind; fair: number; permits: number; last_token: string; now_us: string }
export interface HoldRecord { owner: Buffer; mode: HoldMode; weight: number; token: string; expires_at: string; blocked_until: string; description: string | null; since: string; value: string | null }
export interface LineRecord { owner: Buffer; mode: HoldMode; weight: number; ttl_ms: number; lock_delay_ms: number; stale_at: string; description: string | null; since: string; value: string | null }

export interface Hold extends HoldRow { description: string | null; since: number; value: string | null }
export interface Entry extends LineRow { staleAt: number; ttlMs: number; lockDelayMs: number; description: string | null; since: number; value: string | null }

/** Who a grant goes to: a new holder, or the head of the line. */
export type Grantee = { owner: string; mode: HoldMode; weight: number; ttlMs: number; lockDelayMs: number; description: string | null; value: string | null }

/** What one operation found under the name's row lock; changed in place as it grants and drops. */
export interface NameState {
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

/** The name's row locked (created if missing), its holds and line, and the clock. */
export async function readState(tx: Tx, name: string): Promise<NameState> {
  const state = await lockExisting(tx, name)
  if (!state) throw new Error(`the row of "${name}" vanished under its lock`)
  return state
}

/** As readState, for operations on a name that may not exist (nothing to do then); one round trip. */
export async function lockExisting(tx: Tx, name: string): Promise<NameState | undefined> {
  const [names, holds, line] = await tx.readMany([['read-name', [name]], ['read-holds', [name]], ['read-line', [name]]])
  const row = (names as NameRow[])[0]
  if (!row) return undefined
  return {
    name, kind: row.kind, fair: Boolean(row.fair), permits: row.permits, lastToken: BigInt(row.last_token),
    now: Number(row.now_us), holds: (holds as HoldRecord[]).map(holdOf), line: (line as LineRecord[]).map(entryOf), wakes: [],
  }
}

/** Hands the name to the head of the line while it fits; each new holder's client gets a wake-up row. */
export async function serve(tx: Tx, state: NameState): Promise<void> {
  if (state.line.length === 0) return
  const { grant, drop } = serveLine(takenSlots(state.holds, state.now), state.line, state.permits, state.now)
  const served = [...drop, ...grant]
  if (served.length === 0) return
  tx.write('leave-line', [state.name, served.map((w) => w.owner)])
  state.line = state.line.filter((w) => !served.includes(w))
  for (const entry of grant) {
    const token = await grantHold(tx, state, entry)
    state.wakes.push([clientOf(entry.owner), `g|${entry.owner}|${token}|${entry.ttlMs}`])
  }
}

/** A new hold for `who`, with the name's next token. */
export async function grantHold(tx: Tx, state: NameState, who: Grantee): Promise<bigint> {
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

export async function writeWakes(tx: Tx, state: NameState): Promise<void> {
  if (state.wakes.length === 0) return
  tx.write('wake', [state.wakes.map(([client, message]) => [client, message, state.now])])
}

/** The client an owner belongs to: owners are "<client id>.<lease id>". */
export function clientOf(owner: string): string {
  return owner.slice(0, owner.indexOf('.'))
}

function text(value: Buffer | string): string {
  return typeof value === 'string' ? value : value.toString('utf8')
}

export function holdOf(row: HoldRecord): Hold {
  return {
    owner: text(row.owner), mode: row.mode, weight: Number(row.weight), token: BigInt(row.token),
    expiresAt: Number(row.expires_at), blockedUntil: Number(row.blocked_until),
    description: row.description, since: Number(row.since), value: row.value,
  }
}

export function entryOf(row: LineRecord): Entry {
  return {
    owner: text(row.owner), mode: row.mode, weight: Number(row.weight), staleAt: Number(row.stale_at),
    ttlMs: Number(row.ttl_ms), lockDelayMs: Number(row.lock_delay_ms), description: row.description, since: Number(row.since), value: row.value,
  }
}

export function summary(hold: Hold): HolderSummary {
  return {
    owner: hold.owner, token: hold.token, mode: hold.mode, ...weightField(hold.mode, hold.weight),
    expiresAt: Math.floor(hold.expiresAt / US), ...described(hold), ...(hold.value !== null ? { value: hold.value } : {}),
  }
}

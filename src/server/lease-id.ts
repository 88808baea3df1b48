import { createHash } from 'node:crypto'
import type { HoldMode, HoldRef, LockKind } from '../core/driver.js'
import { MAX_DURATION_MS } from '../core/duration.js'
import { validateName } from '../core/names.js'

/**
 * Lease ids carry everything a server needs to rebuild the hold (spec, owner,
 * token, ttl), so any server sharing the store can extend or release a lease
 * another granted: servers keep no table of leases.
 *
 * What makes them unforgeable is the owner: 128 random bits (Keeper's secret
 * owners) that the store checks on every extend and release, and that the
 * server never shows: inspect, list, events and the dashboard show only
 * `ownerDigest(owner)`, a one-way hash. Knowing a name, a token and a digest
 * is therefore not enough to act on a lease; no server secret is needed, so
 * servers behind a load balancer need no shared key.
 */
export interface LeaseRef extends HoldRef {
  /** The ttl asked for at acquire: the default of a later extend. */
  readonly ttlMs: number
}

const KINDS: readonly LockKind[] = ['mutex', 'rwlock', 'semaphore']
const MODES: readonly HoldMode[] = ['exclusive', 'read', 'write', 'permit']
const MODES_OF: Record<LockKind, readonly HoldMode[]> = { mutex: ['exclusive'], rwlock: ['read', 'write'], semaphore: ['permit'] }
/** `<clientId>.<22 base64url chars = 128 bits>` */
const SECRET_OWNER = /^[A-Za-z0-9_-]{1,16}\.[A-Za-z0-9_-]{22}$/
const TOKEN = /^[1-9]\d{0,38}$/
export const MAX_LEASE_ID_LENGTH = 1024

export function encodeLeaseId(ref: LeaseRef): string {
  const fields = [
    1, ref.name, KINDS.indexOf(ref.kind), MODES.indexOf(ref.mode), ref.permits, ref.fair ? 1 : 0,
    ref.lockDelayMs, ref.owner, ref.token.toString(), ref.ttlMs,
  ]
  return Buffer.from(JSON.stringify(fields)).toString('base64url')
}

/** The ref in a lease id, or null for anything that is not a well-formed lease id. */
export function decodeLeaseId(id: string): LeaseRef | null {
  if (id.length > MAX_LEASE_ID_LENGTH || !/^[A-Za-z0-9_-]+$/.test(id)) return null
  let fields: unknown
  try {
    fields = JSON.parse(Buffer.from(id, 'base64url').toString('utf8'))
  } catch {
    return null
  }
  if (!Array.isArray(fields) || fields.length !== 10 || fields[0] !== 1) return null
  const [, name, kindIndex, modeIndex, permits, fair, lockDelayMs, owner, token, ttlMs] = fields as unknown[]
  const kind = KINDS[kindIndex as number]
  const mode = MODES[modeIndex as number]
  if (!kind || !mode || !MODES_OF[kind].includes(mode)) return null
  if (!isWhole(permits, 1, 1_000_000) || (kind !== 'semaphore' && permits !== 1)) return null
  if (fair !== 0 && fair !== 1) return null
  if (!isWhole(lockDelayMs, 0, MAX_DURATION_MS) || !isWhole(ttlMs, 1, MAX_DURATION_MS)) return null
  if (typeof owner !== 'string' || !SECRET_OWNER.test(owner)) return null
  if (typeof token !== 'string' || !TOKEN.test(token)) return null
  try {
    validateName(name)
  } catch {
    return null
  }
  return {
    name: name as string, kind, mode, permits: permits as number, fair: fair === 1, lockDelayMs: lockDelayMs as number,
    owner, token: BigInt(token), ttlMs: ttlMs as number,
  }
}

function isWhole(value: unknown, min: number, max: number): boolean {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max
}

/**
 * What the server shows in place of an owner: a one-way digest, enough to
 * tell holders apart and to match one's own lease in inspect or events, and
 * useless for acting on a lease.
 */
export function ownerDigest(owner: string): string {
  return createHash('sha256').update(owner).digest('base64url').slice(0, 16)
}

import * as crypto from 'node:crypto'
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

/**
 * A compact binary layout, base64url: parsing JSON and checking ten fields
 * of an array by regex cost a visible share of each request.
 *
 *   u8 version (2) · u8 kind | mode << 2 | fair << 4 | weighted << 5 ·
 *   varint permits · [varint weight, when weighted] ·
 *   varint lockDelayMs · varint ttlMs · u8 n + n ASCII digits of the token ·
 *   u8 n + n ASCII bytes of the owner · the name in UTF-8 (the rest)
 *
 * A permit of weight 1 leaves the weighted bit clear, so its id is the one
 * earlier servers issue and read; a weighted permit's id (weighted permits)
 * is read only by servers that know the bit, older ones refuse it as malformed.
 */
const VERSION = 2
const scratch = Buffer.allocUnsafe(2 * MAX_LEASE_ID_LENGTH)

export function encodeLeaseId(ref: HoldRef, ttlMs: number): string {
  const buf = scratch
  buf[0] = VERSION
  const weight = ref.weight ?? 1
  buf[1] = KINDS.indexOf(ref.kind) | (MODES.indexOf(ref.mode) << 2) | (ref.fair ? 16 : 0) | (weight > 1 ? 32 : 0)
  let at = writeVarint(buf, 2, ref.permits)
  if (weight > 1) at = writeVarint(buf, at, weight)
  at = writeVarint(buf, at, ref.lockDelayMs)
  at = writeVarint(buf, at, ttlMs)
  const token = ref.token.toString()
  buf[at] = token.length
  at += 1 + buf.write(token, at + 1, 'latin1')
  buf[at] = ref.owner.length
  at += 1 + buf.write(ref.owner, at + 1, 'latin1')
  at += buf.write(ref.name, at, 'utf8')
  return buf.toString('base64url', 0, at)
}

/** The ref in a lease id, or null for anything that is not a well-formed lease id. */
export function decodeLeaseId(id: string): LeaseRef | null {
  if (id.length > MAX_LEASE_ID_LENGTH || !/^[A-Za-z0-9_-]+$/.test(id)) return null
  const buf = Buffer.from(id, 'base64url')
  if (buf.length < 8 || buf[0] !== VERSION) return null
  const flags = buf[1]!
  const kind = KINDS[flags & 3]
  const mode = MODES[(flags >> 2) & 3]
  if (!kind || !mode || !MODES_OF[kind].includes(mode) || flags >> 6 !== 0) return null
  const cursor = { at: 2 }
  const permits = readVarint(buf, cursor)
  const weight = (flags & 32) !== 0 ? readVarint(buf, cursor) : 1
  if (weight !== 1 && (kind !== 'semaphore' || !isWhole(weight, 2, permits))) return null
  const lockDelayMs = readVarint(buf, cursor)
  const ttlMs = readVarint(buf, cursor)
  if (!isWhole(permits, 1, 1_000_000) || (kind !== 'semaphore' && permits !== 1)) return null
  if (!isWhole(lockDelayMs, 0, MAX_DURATION_MS) || !isWhole(ttlMs, 1, MAX_DURATION_MS)) return null
  const token = readAscii(buf, cursor)
  const owner = readAscii(buf, cursor)
  if (token === undefined || !TOKEN.test(token) || owner === undefined || !SECRET_OWNER.test(owner)) return null
  const name = buf.toString('utf8', cursor.at)
  try {
    validateName(name)
  } catch {
    return null
  }
  const ref = { name, kind, mode, permits, fair: (flags & 16) !== 0, lockDelayMs, owner, token: BigInt(token), ttlMs }
  return weight > 1 ? { ...ref, weight } : ref
}

/** Unsigned LEB128 of a whole number below 2^53. */
function writeVarint(buf: Buffer, at: number, value: number): number {
  while (value >= 128) {
    buf[at++] = (value % 128) | 128
    value = Math.floor(value / 128)
  }
  buf[at++] = value
  return at
}

/** NaN when malformed (too long, or past the end). */
function readVarint(buf: Buffer, cursor: { at: number }): number {
  let value = 0
  let scale = 1
  for (let i = 0; i < 8; i++) {
    const byte = buf[cursor.at++]
    if (byte === undefined) return NaN
    value += (byte & 127) * scale
    if (byte < 128) return value
    scale *= 128
  }
  return NaN
}

function readAscii(buf: Buffer, cursor: { at: number }): string | undefined {
  const length = buf[cursor.at]
  if (length === undefined || cursor.at + 1 + length > buf.length) return undefined
  const text = buf.toString('latin1', cursor.at + 1, cursor.at + 1 + length)
  cursor.at += 1 + length
  return text
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
  // One-shot crypto.hash (Node >= 20.12) is a third cheaper than a Hash object; it runs once per grant.
  return (oneShot ? oneShot('sha256', owner, 'base64url') : createHash('sha256').update(owner).digest('base64url')).slice(0, 16)
}

/**
 * The owner of an idempotent acquire: the server's client id and 128 bits
 * of SHA-256 of the client's secret request id and the name. A retried
 * request (its first answer lost on the way) acquires as the same owner, and
 * the store answers it the hold the first attempt got; the request id is a
 * secret of the client, so the owner stays unguessable.
 */
export function idempotentOwner(clientId: string, requestId: string, name: string, weight = 1): string {
  // A weighted permit's weight is part of the request: a retry asking another
  // weight is another owner. As one owner the store would find the first hold
  // and the answer would claim the new weight for it (more than `permits` in
  // use). Weight 1 keeps the owner earlier servers derive.
  const text = weight > 1 ? `${requestId}\u0000${name}\u0000${weight}` : `${requestId}\u0000${name}`
  const digest = oneShot ? oneShot('sha256', text, 'base64url') : createHash('sha256').update(text).digest('base64url')
  return `${clientId}.${digest.slice(0, 22)}`
}

const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'base64url') => string }).hash

import * as crypto from 'node:crypto'
import { createHash, createHmac, timingSafeEqual } from 'node:crypto'
import type { HoldMode, HoldRef, LockKind } from '../core/driver.js'
import { MAX_DURATION_MS } from '../core/duration.js'
import { invalidArgument } from '../core/errors.js'
import { validateName } from '../core/names.js'

/**
 * Lease ids carry everything a server needs to rebuild the hold (spec, owner,
 * token, ttl), so any server sharing the store can extend or release a lease
 * another granted: servers keep no table of leases.
 *
 * Two things make them unforgeable:
 * - the owner: 128 random bits (Keeper's secret owners) that the store checks
 *   on every extend and release, and that the server never shows (inspect,
 *   list, events and the dashboard show only `ownerDigest(owner)`), so nobody
 *   can name another client's hold;
 * - a MAC: HMAC-SHA256 (its first 128 bits) under a key the servers of one
 *   store share (src/server/lease-secret.ts), over every other byte of the
 *   id, so a client can change nothing in its own id either (a longer ttl or
 *   lock delay, another mode or weight), and an id minted by a server of
 *   another store is not one of this store's. The ttl and lock delay in an
 *   id are still only what was asked: every renewal holds them to the caps
 *   in force then.
 */
export interface LeaseRef extends HoldRef {
  /** The ttl asked for at acquire: the default of a later extend (capped by --max-ttl at that time). */
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
 *   u8 version (3) · u8 kind | mode << 2 | fair << 4 | weighted << 5 ·
 *   varint permits · [varint weight, when weighted] ·
 *   varint lockDelayMs · varint ttlMs · u8 n + n ASCII digits of the token ·
 *   u8 n + n ASCII bytes of the owner · the name in UTF-8 ·
 *   16 bytes of MAC over everything before it
 *
 * Version 2 (the same without the MAC) is refused: an unsigned id proves
 * nothing, so a lease granted by an older server is renewed through it only.
 */
const VERSION = 3
const MAC_BYTES = 16
/** Keys derived from the shared secret for this use only, so the secret itself never meets a client's bytes. */
const KEY_LABEL = 'baton lease id v3'
/** Shortest secret accepted (--lease-secret): 128 bits of a random hex or base64 text. */
export const MIN_SECRET_BYTES = 16

/**
 * Encodes and checks lease ids under the servers' shared secret. `previous`
 * secrets are still accepted (never used to mint): the store's secret can be
 * replaced while ids under the old one are in use (lease-secret.ts).
 */
export class LeaseIds {
  private key: Buffer
  private older: Buffer[] = []
  private readonly scratch = Buffer.allocUnsafe(2 * MAX_LEASE_ID_LENGTH)

  constructor(secret: string | Buffer) {
    this.key = deriveKey(secret)
  }

  /** Mints with `secret` from now on; ids under the one it replaces stay good. */
  rekey(secret: string | Buffer): void {
    const key = deriveKey(secret)
    if (key.equals(this.key)) return
    this.older = [this.key, ...this.older].slice(0, 2)
    this.key = key
  }

  encode(ref: HoldRef, ttlMs: number): string {
    const buf = this.scratch
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
    at += mac(this.key, buf.subarray(0, at)).copy(buf, at)
    return buf.toString('base64url', 0, at)
  }

  /** The ref in a lease id, or null for anything that is not a lease id a server of this store minted. */
  decode(id: string): LeaseRef | null {
    if (id.length > MAX_LEASE_ID_LENGTH || !/^[A-Za-z0-9_-]+$/.test(id)) return null
    const whole = Buffer.from(id, 'base64url')
    if (whole.length < 8 + MAC_BYTES || whole[0] !== VERSION) return null
    const buf = whole.subarray(0, whole.length - MAC_BYTES)
    const tag = whole.subarray(whole.length - MAC_BYTES)
    // Checked before anything is read from the id: every key in constant time, whichever matches.
    let good = false
    for (const key of [this.key, ...this.older]) good = timingSafeEqual(mac(key, buf), tag) || good
    return good ? parse(buf) : null
  }
}

function deriveKey(secret: string | Buffer): Buffer {
  if (Buffer.byteLength(secret) < MIN_SECRET_BYTES) throw invalidArgument(`a lease secret must be at least ${MIN_SECRET_BYTES} bytes`)
  return createHmac('sha256', secret).update(KEY_LABEL).digest()
}

function mac(key: Buffer, bytes: Buffer): Buffer {
  return createHmac('sha256', key).update(bytes).digest().subarray(0, MAC_BYTES)
}

/** The fields of an authenticated id; still checked, as an id minted by a server with other rules could differ. */
function parse(buf: Buffer): LeaseRef | null {
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

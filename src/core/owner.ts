import { createHash, randomBytes } from 'node:crypto'

/**
 * Owner ids are `<clientId>.<leaseId>`, short because a store keeps one per
 * hold (8 + 1 + 4 + a base-36 counter characters): the client part lets a store route a
 * wake-up to the one connection that waits for it, the lease part makes every
 * hold unique, so one client's two flows never pass for each other.
 * Both are random (crypto), never guessable.
 */
export function newClientId(): string {
  return randomBytes(6).toString('base64url')
}

let counter = 0
const leasePrefix = randomBytes(3).toString('base64url')

export function newOwnerId(clientId: string): string {
  // A random per-process prefix plus a counter: unique, unguessable across
  // processes, and cheap on the hot path (no syscall per acquire).
  counter = (counter + 1) % Number.MAX_SAFE_INTEGER
  return `${clientId}.${leasePrefix}${counter.toString(36)}`
}

/** A pool of random bytes so secret owner ids cost no syscall per acquire. */
let pool = Buffer.alloc(0)
let poolAt = 0

/**
 * An owner id with 128 random bits after the client id, for holds whose owner
 * is a capability: the lock server puts it in lease ids, so it must be
 * unguessable, and it is never shown (only a digest of it is).
 */
export function newSecretOwnerId(clientId: string): string {
  if (poolAt + 16 > pool.length) {
    pool = randomBytes(16 * 256)
    poolAt = 0
  }
  const secret = pool.toString('base64url', poolAt, poolAt + 16)
  poolAt += 16
  return `${clientId}.${secret}`
}

/** `<clientId>.<22 base64url chars = 128 bits>`: newSecretOwnerId's shape (and the lock server's idempotent owners). */
const SECRET_OWNER = /^[A-Za-z0-9_-]{1,16}\.[A-Za-z0-9_-]{22}$/

/**
 * How a hold's owner is shown, the same through every path (the store's own
 * URL, a baton server, its dashboard), so operators can follow one hold: a
 * secret owner (a capability inside the lock server's lease ids) is shown as
 * a one-way digest of it, every other owner as itself. The digest is the
 * lock server's: the first 16 base64url characters of SHA-256.
 */
export function publicOwner(owner: string): string {
  return SECRET_OWNER.test(owner) ? ownerDigestOf(owner) : owner
}

/** First 16 base64url characters of SHA-256 of the owner. */
export function ownerDigestOf(owner: string): string {
  return createHash('sha256').update(owner).digest('base64url').slice(0, 16)
}

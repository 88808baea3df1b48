/**
 * The resource side of fencing, independent of any store.
 *
 * Every grant carries a fencing token that is strictly greater than every
 * earlier grant's token for the same name. A lock alone cannot stop a holder
 * that was paused past its lease (GC, SIGSTOP, a slow disk) from writing
 * after the next holder started: only the resource can, by remembering the
 * highest token it has accepted and refusing anything below it. A write with
 * the *same* token as the highest is the same holder writing again and is
 * accepted.
 *
 * The check and the write must be one atomic step. A guard that checks in one
 * place and writes in another lets this happen: A (token 5) passes the check,
 * B (token 6) passes and writes, A writes last. The PostgreSQL and Redis
 * guards make the check part of the write (one transaction, one script); the
 * HTTP guard serialises a resource's requests in its process; `advanceFence`
 * below is the compare-and-set loop for anything else, and is only safe when
 * the cell it advances lives beside the data and is changed with it.
 */
import { BatonError, invalidArgument } from '../core/errors.js'

/** What a fenced resource decided about one token. */
export type FenceVerdict =
  | { readonly accepted: true; readonly highest: bigint }
  | { readonly accepted: false; readonly highest: bigint }

/**
 * Where a resource keeps the highest token it has accepted: a column beside
 * the data, a field of the record, a key next to the value. Implement these
 * two calls on your own storage to use `advanceFence`.
 */
export interface FenceCell {
  /** The highest token accepted so far for `resource`, or undefined if none yet. */
  read(resource: string): Promise<bigint | undefined>
  /** Sets the highest token to `next` only if it is still `expected`; true if it did. */
  compareAndSet(resource: string, expected: bigint | undefined, next: bigint): Promise<boolean>
}

/** Bound on compare-and-set rounds: each lost round means a higher token arrived, so few are ever needed. */
const MAX_ROUNDS = 64

/**
 * Records `token` as the highest for `resource` unless a higher one was
 * accepted already. Throws STALE_TOKEN (never retry it: the lock was lost)
 * when the token is below the highest.
 */
export async function advanceFence(cell: FenceCell, resource: string, token: bigint | string | number): Promise<bigint> {
  const wanted = parseFencingToken(token)
  checkResource(resource)
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const highest = await cell.read(resource)
    if (highest !== undefined && wanted < highest) throw staleToken(resource, wanted, highest)
    if (highest === wanted) return wanted
    if (await cell.compareAndSet(resource, highest, wanted)) return wanted
  }
  throw new BatonError('BACKEND_UNAVAILABLE', `the fence of "${resource}" kept changing under ${MAX_ROUNDS} compare-and-set rounds`, { lockName: resource })
}

export interface MemoryFenceOptions {
  /**
   * The most names whose highest token is kept one by one (default: no
   * bound). Past it, the name used least recently is forgotten, its highest
   * token kept in a floor shared with other names (see MemoryFence).
   */
  maxResources?: number
}

/** Floors shared by forgotten names: a fixed number, so memory stays bounded whatever names arrive. */
const FLOOR_BUCKETS = 1024

/**
 * A FenceCell in this process's memory: for a resource that lives in this
 * process (an in-memory cache, a file this process alone writes), and for tests.
 * Its compare-and-set is synchronous, so check and write in the same tick are atomic.
 *
 * Bounded by `maxResources`, it forgets the name used least recently, but
 * never what that name's highest token was: forgetting it would let a stale
 * token of that name through. The forgotten token raises the floor of the
 * name's bucket (one of 1024, by a hash of the name), and a name not kept
 * one by one counts the floor of its bucket as its highest. So a stale token
 * is still refused; the price is that a token below its bucket's floor is
 * refused too (409), for a name seen for the first time as well, until its
 * tokens pass the floor. baton's tokens grow with time or with the store's
 * revision, so that is rare; size `maxResources` above the number of names
 * in use at once, and `evictions` tells whether it was reached.
 */
export class MemoryFence implements FenceCell {
  private readonly highest = new Map<string, bigint>()
  private readonly floors = new Map<number, bigint>()
  private readonly maxResources: number
  /** How many names were forgotten (their tokens raised a floor). */
  evictions = 0

  constructor(options: MemoryFenceOptions = {}) {
    const max = options.maxResources ?? Infinity
    if (max !== Infinity && (!Number.isSafeInteger(max) || max < 1)) {
      throw invalidArgument(`maxResources is a whole number of at least 1, got ${String(max)}`)
    }
    this.maxResources = max
  }

  /** How many names are kept one by one. */
  get size(): number {
    return this.highest.size
  }

  async read(resource: string): Promise<bigint | undefined> {
    return this.highestOf(resource)
  }

  async compareAndSet(resource: string, expected: bigint | undefined, next: bigint): Promise<boolean> {
    if (this.highestOf(resource) !== expected) return false
    this.remember(resource, next)
    return true
  }

  /** The same decision as `advanceFence`, made synchronously. */
  decide(resource: string, token: bigint): FenceVerdict {
    const highest = this.highestOf(resource)
    if (highest !== undefined && token < highest) {
      this.touch(resource)
      return { accepted: false, highest }
    }
    this.remember(resource, token)
    return { accepted: true, highest: token }
  }

  private highestOf(resource: string): bigint | undefined {
    return this.highest.get(resource) ?? this.floors.get(bucketOf(resource))
  }

  /** Marks a kept name as used now (a Map iterates in insertion order: the first is the least recent). */
  private touch(resource: string): void {
    const kept = this.highest.get(resource)
    if (kept === undefined) return
    this.highest.delete(resource)
    this.highest.set(resource, kept)
  }

  private remember(resource: string, token: bigint): void {
    this.highest.delete(resource)
    this.highest.set(resource, token)
    while (this.highest.size > this.maxResources) {
      const [oldest, itsHighest] = this.highest.entries().next().value as [string, bigint]
      this.highest.delete(oldest)
      const bucket = bucketOf(oldest)
      const floor = this.floors.get(bucket)
      if (floor === undefined || itsHighest > floor) this.floors.set(bucket, itsHighest)
      this.evictions++
    }
  }
}

/** FNV-1a over the name's UTF-16 code units: which floor a forgotten name shares. */
function bucketOf(resource: string): number {
  let hash = 0x811c9dc5
  for (let i = 0; i < resource.length; i++) {
    hash ^= resource.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193)
  }
  return (hash >>> 0) % FLOOR_BUCKETS
}

/** The error a fenced resource answers a stale token with. */
export function staleToken(resource: string, token: bigint, highest: bigint): BatonError {
  return new BatonError(
    'STALE_TOKEN',
    `write to "${resource}" refused: fencing token ${token} is below ${highest}, which a later holder already used; ` +
      'this holder lost its lock (it was paused or cut off past its ttl) and must stop',
    { lockName: resource },
  )
}

const TOKEN_PATTERN = /^(0|[1-9][0-9]{0,38})$/

/** A fencing token from a lease, a header or a JSON body: a non-negative whole number. */
export function parseFencingToken(value: bigint | string | number): bigint {
  if (typeof value === 'bigint') {
    if (value < 0n) throw invalidArgument(`a fencing token is a non-negative whole number, got ${value}`)
    return value
  }
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value) || value < 0) throw invalidArgument(`a fencing token is a non-negative whole number, got ${value}; pass lease.token (a bigint) or its decimal string`)
    return BigInt(value)
  }
  if (typeof value !== 'string' || !TOKEN_PATTERN.test(value)) {
    throw invalidArgument(`a fencing token is a non-negative whole number in decimal, got ${JSON.stringify(String(value).slice(0, 64))}`)
  }
  return BigInt(value)
}

/** A resource name for a fence: usually the lock's name. */
export function checkResource(resource: string): void {
  if (typeof resource !== 'string' || resource.length === 0 || resource.length > 1024) {
    throw invalidArgument(`a fenced resource is a non-empty string of at most 1024 characters, got ${JSON.stringify(String(resource).slice(0, 64))}`)
  }
}

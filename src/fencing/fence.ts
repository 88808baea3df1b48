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

/**
 * A FenceCell in this process's memory: for a resource that lives in this
 * process (an in-memory cache, a file this process alone writes), and for tests.
 * Its compare-and-set is synchronous, so check and write in the same tick are atomic.
 */
export class MemoryFence implements FenceCell {
  private readonly highest = new Map<string, bigint>()

  async read(resource: string): Promise<bigint | undefined> {
    return this.highest.get(resource)
  }

  async compareAndSet(resource: string, expected: bigint | undefined, next: bigint): Promise<boolean> {
    if (this.highest.get(resource) !== expected) return false
    this.highest.set(resource, next)
    return true
  }

  /** The same decision as `advanceFence`, made synchronously. */
  decide(resource: string, token: bigint): FenceVerdict {
    const highest = this.highest.get(resource)
    if (highest !== undefined && token < highest) return { accepted: false, highest }
    this.highest.set(resource, token)
    return { accepted: true, highest: token }
  }
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

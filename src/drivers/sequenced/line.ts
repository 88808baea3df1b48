import type { HoldMode, HolderSummary, LockKind, LockSpec } from '../../core/driver.js'
import { describeConflict } from '../../core/compat.js'

/**
 * The line shared by the consensus stores (etcd, ZooKeeper): every hold and
 * every waiter is one entry, and the store orders entries by creation (etcd's
 * create revision, ZooKeeper's sequence number). Nobody is ever "promoted":
 * an entry holds as soon as the entries before it allow its mode, so a
 * release hands over by merely deleting its entry, and the line is fair by
 * nature. Each waiter reacts only to the entries that block it (below), never
 * to every change, so a release wakes one waiter, not the herd.
 */
export interface LineEntry {
  /** Store key or node name: unique, stable while the entry lives. */
  readonly id: string
  readonly owner: string
  readonly kind: LockKind
  readonly mode: HoldMode
  readonly permits: number
  readonly fair: boolean
  /** The fencing token: strictly increasing in line order (creation revision / zxid). */
  readonly token: bigint
}

const isExclusive = (mode: HoldMode): boolean => mode === 'exclusive' || mode === 'write'

/**
 * The entries the one at `index` must see gone (or changed) before it may
 * hold; empty when it holds now.
 * - mutex / write: its immediate predecessor (which waits for its own, and so on);
 * - read: the last exclusive entry before it (readers ahead never block it);
 * - permit: the `permits` nearest entries before it once `permits` or more are
 *   ahead — the farthest of them is "the node N places ahead"; a release of any
 *   nearer one also brings it into range, so all N are watched (a release
 *   wakes at most N waiters, however long the line).
 */
export function blockersOf(line: readonly LineEntry[], index: number): LineEntry[] {
  const me = line[index]!
  if (index === 0) return []
  switch (me.mode) {
    case 'exclusive':
    case 'write':
      return [line[index - 1]!]
    case 'read': {
      for (let i = index - 1; i >= 0; i--) if (isExclusive(line[i]!.mode)) return [line[i]!]
      return []
    }
    case 'permit':
      return index < me.permits ? [] : line.slice(index - me.permits, index)
  }
}

/** Entries that hold now, in line order. */
export function holdersIn(line: readonly LineEntry[]): LineEntry[] {
  return line.filter((_, i) => blockersOf(line, i).length === 0)
}

/** Entries that wait, in the order they will be served. */
export function waitersIn(line: readonly LineEntry[]): LineEntry[] {
  return line.filter((_, i) => blockersOf(line, i).length > 0)
}

/** Why `request` can never share the line as asked (another kind or permit count uses the name). */
export function conflictIn(line: readonly LineEntry[], request: LockSpec & { owner: string }): string | undefined {
  const other = line.find((e) => e.owner !== request.owner)
  return other ? describeConflict(other, request) : undefined
}

/** `<kind letter><mode letter><permits>[f]|<owner>`: what an entry carries as its value / data. */
const KIND_LETTER: Record<LockKind, string> = { mutex: 'm', rwlock: 'r', semaphore: 's' }
const LETTER_KIND: Record<string, LockKind> = { m: 'mutex', r: 'rwlock', s: 'semaphore' }
const MODE_LETTER: Record<HoldMode, string> = { exclusive: 'x', read: 'r', write: 'w', permit: 'p' }
const LETTER_MODE: Record<string, HoldMode> = { x: 'exclusive', r: 'read', w: 'write', p: 'permit' }

export function encodeEntry(spec: { kind: LockKind; mode: HoldMode; permits: number; fair: boolean; owner: string }): string {
  return `${KIND_LETTER[spec.kind]}${MODE_LETTER[spec.mode]}${spec.permits}${spec.fair ? 'f' : ''}|${spec.owner}`
}

/**
 * Reads an entry's value. Anything else (an empty value written by
 * `etcdctl lock` or another program's lock recipe) is a foreign exclusive
 * holder: it excludes baton and baton excludes it.
 */
export function decodeEntry(id: string, token: bigint, value: string, foreignOwner: string): LineEntry {
  const match = /^([mrs])([xrwp])(\d+)(f?)\|(.+)$/.exec(value)
  if (!match) return { id, token, owner: foreignOwner, kind: 'mutex', mode: 'exclusive', permits: 1, fair: true }
  return {
    id, token, owner: match[5]!, kind: LETTER_KIND[match[1]!]!, mode: LETTER_MODE[match[2]!]!,
    permits: Number(match[3]), fair: match[4] === 'f',
  }
}

export function summaryOf(entry: LineEntry, expiresAt: number): HolderSummary {
  return { owner: entry.owner, token: entry.token, mode: entry.mode, expiresAt }
}

/** Why a consensus store refuses a lock delay, as a conflict detail (the core throws INVALID_ARGUMENT). */
export function noLockDelay(store: string, request: { name: string; lockDelayMs: number }): string | undefined {
  if (request.lockDelayMs <= 0) return undefined
  return `the ${store} store has no lock delay ("lockDelay" on "${request.name}"): a crashed client's holds end with its ` +
    `${store === 'etcd' ? 'lease' : 'session'}, and nothing may outlive it; use lockDelay 0 (fencing tokens protect the resource instead)`
}

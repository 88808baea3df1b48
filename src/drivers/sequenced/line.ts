import type { HoldMode, HolderSummary, LockKind, LockSpec, WaiterSummary } from '../../core/driver.js'
import { describeConflict, weightField, weightOf } from '../../core/compat.js'

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
  /** Weighted permits: how many permits the entry takes (LockSpec.weight; 1 for other kinds). */
  readonly weight: number
  readonly fair: boolean
  /** The fencing token: strictly increasing in line order (creation revision / zxid). */
  readonly token: bigint
  /** Who asked (AcquireRequest.description), when the entry carries it. */
  readonly description?: string
  /** When the entry was made (it joined the line, or was granted at once), epoch ms. */
  readonly since?: number
  /** A leader election candidate's value (AcquireRequest.value), when the entry carries one. */
  readonly value?: string
}

/** What an entry carries beside its spec, for operators: who asked, and when; and a candidate's value. */
export interface EntryNote {
  readonly description?: string
  readonly since?: number
  readonly value?: string
  /**
   * ZooKeeper, an entry with a lock delay: the path of the node that says its
   * hold is live (on a session as long as its ttl). Gone, the entry is a
   * phantom of an expired hold.
   */
  readonly alive?: string
}

/** The note as stored (etcd: after the spec line of the value; ZooKeeper: the node's data). */
export function encodeNote(note: EntryNote): string {
  return JSON.stringify({
    ...(note.description !== undefined ? { d: note.description } : {}), ...(note.since !== undefined ? { s: note.since } : {}),
    ...(note.value !== undefined ? { v: note.value } : {}), ...(note.alive !== undefined ? { a: note.alive } : {}),
  })
}

/** A stored note; anything unreadable (another program's data) is no note. */
export function decodeNote(text: string): EntryNote {
  try {
    const parsed = JSON.parse(text) as { d?: unknown; s?: unknown; v?: unknown; a?: unknown }
    if (typeof parsed !== 'object' || parsed === null) return {}
    return {
      ...(typeof parsed.d === 'string' ? { description: parsed.d } : {}),
      ...(typeof parsed.s === 'number' && Number.isFinite(parsed.s) ? { since: parsed.s } : {}),
      ...(typeof parsed.v === 'string' ? { value: parsed.v } : {}),
      ...(typeof parsed.a === 'string' ? { alive: parsed.a } : {}),
    }
  } catch {
    return {}
  }
}

const isExclusive = (mode: HoldMode): boolean => mode === 'exclusive' || mode === 'write'

/**
 * The entries the one at `index` must see gone (or changed) before it may
 * hold; empty when it holds now.
 * - mutex / write: its immediate predecessor (which waits for its own, and so on);
 * - read: the last exclusive entry before it (readers ahead never block it);
 * - permit: it holds while the weights of every entry ahead plus its own come
 *   to at most `permits` (weighted permits; each weight is 1 when unweighted),
 *   so the line is served strictly in order: a heavy entry that does not fit
 *   stops the lighter ones behind it. Its blockers are the nearest entries
 *   ahead whose weights already leave too little room: while they all stay it
 *   can not hold, and a release of any of them may bring it into range. For
 *   unweighted permits these are the `permits` nearest entries ("the node N
 *   places ahead" and the nearer ones), so a release wakes at most N waiters,
 *   however long the line.
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
    case 'permit': {
      const room = me.permits - me.weight
      let ahead = 0
      for (let i = index - 1; i >= 0; i--) {
        ahead += line[i]!.weight
        if (ahead > room) return line.slice(i, index)
      }
      return []
    }
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

/**
 * `<kind letter><mode letter><permits>[*<weight>][f]|<owner>`: what an entry
 * carries as its value / data. The weight is written only when above 1, so
 * unweighted entries keep the layout earlier versions read (an earlier
 * version reads a weighted entry as a foreign holder: it is excluded, never
 * over-granted).
 */
const KIND_LETTER: Record<LockKind, string> = { mutex: 'm', rwlock: 'r', semaphore: 's' }
const LETTER_KIND: Record<string, LockKind> = { m: 'mutex', r: 'rwlock', s: 'semaphore' }
const MODE_LETTER: Record<HoldMode, string> = { exclusive: 'x', read: 'r', write: 'w', permit: 'p' }
const LETTER_MODE: Record<string, HoldMode> = { x: 'exclusive', r: 'read', w: 'write', p: 'permit' }

export function encodeEntry(spec: { kind: LockKind; mode: HoldMode; permits: number; weight?: number | undefined; fair: boolean; owner: string }): string {
  const weight = spec.kind === 'semaphore' && weightOf(spec) > 1 ? `*${weightOf(spec)}` : ''
  return `${KIND_LETTER[spec.kind]}${MODE_LETTER[spec.mode]}${spec.permits}${weight}${spec.fair ? 'f' : ''}|${spec.owner}`
}

/**
 * Reads an entry's value. Anything else (an empty value written by
 * `etcdctl lock` or another program's lock recipe) is a foreign exclusive
 * holder: it excludes baton and baton excludes it.
 */
export function decodeEntry(id: string, token: bigint, value: string, foreignOwner: string): LineEntry {
  // An etcd value is the spec, then its note on the next line.
  const newline = value.indexOf('\n')
  if (newline >= 0) {
    const entry = decodeEntry(id, token, value.slice(0, newline), foreignOwner)
    return entry.owner === foreignOwner ? entry : { ...entry, ...decodeNote(value.slice(newline + 1)) }
  }
  const match = /^([mrs])([xrwp])(\d+)(?:\*(\d+))?(f?)\|(.+)$/.exec(value)
  if (!match) return { id, token, owner: foreignOwner, kind: 'mutex', mode: 'exclusive', permits: 1, weight: 1, fair: true }
  return {
    id, token, owner: match[6]!, kind: LETTER_KIND[match[1]!]!, mode: LETTER_MODE[match[2]!]!,
    permits: Number(match[3]), weight: match[4] === undefined ? 1 : Number(match[4]), fair: match[5] === 'f',
  }
}

export function summaryOf(entry: LineEntry, expiresAt: number): HolderSummary {
  return { owner: entry.owner, token: entry.token, mode: entry.mode, ...weightField(entry.mode, entry.weight), expiresAt, ...noteOf(entry), ...(entry.value !== undefined ? { value: entry.value } : {}) }
}

export function waiterSummaryOf(entry: LineEntry): WaiterSummary {
  return { owner: entry.owner, mode: entry.mode, ...weightField(entry.mode, entry.weight), ...noteOf(entry) }
}

function noteOf(entry: LineEntry): EntryNote {
  return {
    ...(entry.description !== undefined ? { description: entry.description } : {}),
    ...(entry.since !== undefined ? { since: entry.since } : {}),
  }
}

/**
 * etcd's election layout (concurrency.Election, `etcdctl elect`) keeps the
 * bare value as the key's value, where baton keeps its spec. A value that
 * would read as a spec (any shape decodeEntry accepts, weighted ones too) is
 * kept behind a NUL, which no value can start with (the core refuses NUL in
 * values): every value is accepted, as on every store, and none can pass for
 * a baton entry. Other programs see such a value with its NUL.
 */
const ESCAPE = '\u0000'

export function encodeCandidateValue(value: string): string {
  const readsAsEntry = decodeEntry('', 0n, value, '\u0000').owner !== '\u0000'
  return readsAsEntry || value.startsWith(ESCAPE) ? ESCAPE + value : value
}

/** A candidate's value as announced, from what the key keeps (see encodeCandidateValue). */
export function decodeCandidateValue(stored: string): string {
  return stored.startsWith(ESCAPE) ? stored.slice(1) : stored
}

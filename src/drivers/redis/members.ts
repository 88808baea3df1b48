import type { HoldMode, HoldRef, HolderSummary, LockKind, LockSpec, WaiterSummary } from '../../core/driver.js'
import { weightField, weightOf } from '../../core/compat.js'

/**
 * How holds and line entries are written inside the store and read back:
 * the spec string, the hold member, the note beside it, and the summaries
 * made of them. One place for the layout the Lua scripts share
 * (scripts/basics.lua), apart from the calls that send it.
 */

const MODE_LETTER: Record<HoldMode, string> = { exclusive: 'x', read: 'r', write: 'w', permit: 'p' }
export const LETTER_MODE: Record<string, HoldMode> = { x: 'exclusive', r: 'read', w: 'write', p: 'permit' }
export const LETTER_KIND: Record<string, LockKind> = { x: 'mutex', r: 'rwlock', w: 'rwlock', p: 'semaphore' }

/**
 * "<mode letter>[permits][*weight][f]": how a hold's spec travels inside the
 * store (see scripts/basics.lua). The weight is written only when above 1,
 * so unweighted permits keep the layout earlier versions read.
 */
export function specOf(spec: LockSpec): string {
  if (spec.mode === 'exclusive') return spec.fair ? 'xf' : 'x'
  const weight = spec.kind === 'semaphore' && weightOf(spec) > 1 ? `*${weightOf(spec)}` : ''
  return `${MODE_LETTER[spec.mode]}${spec.kind === 'semaphore' ? spec.permits : ''}${weight}${spec.fair ? 'f' : ''}`
}

/** The weight inside a spec string ("p8*3f" → 3); 1 when it has none. */
export function weightInSpec(spec: string): number {
  const weight = /\*(\d+)/.exec(spec)?.[1]
  return weight === undefined ? 1 : Number(weight)
}

/** A hold's member string in the store (the Redlock line node's release matches it too). */
export function memberOf(hold: HoldRef): string {
  return `${hold.owner}|${specOf(hold)}|${hold.token}|${hold.lockDelayMs}`
}

/**
 * What the store keeps as a hold's or line entry's note: the description,
 * and for a leader election's candidate "\0" and its value (the scripts
 * publish to the name's observers for such holds; scripts/basics.lua).
 */
export function noteOf(description: string | undefined, value: string | undefined): string | undefined {
  return value === undefined ? description : `${description ?? ''}\0${value}`
}

/** A summary with the since, description and value the store keeps ("" where it has none). */
export function described<T extends HolderSummary | WaiterSummary>(summary: T, since: string, note: string): T {
  const cut = note.indexOf('\0')
  const description = cut < 0 ? note : note.slice(0, cut)
  return {
    ...summary,
    ...(description !== '' ? { description } : {}),
    ...(since !== '' ? { since: Number(since) } : {}),
    ...(cut >= 0 && 'token' in summary ? { value: note.slice(cut + 1) } : {}),
  }
}

/** A holders member ("owner|spec|token|delay") and its score → a summary. */
export function parseHolder(member: string, score: number, scoreIncludesDelay = false): HolderSummary {
  const [owner = '', spec = 'x', token = '0', delay = '0'] = member.split('|')
  const mode = LETTER_MODE[spec[0]!] ?? 'exclusive'
  return {
    owner,
    token: BigInt(token),
    mode,
    ...weightField(mode, weightInSpec(spec)),
    expiresAt: scoreIncludesDelay ? score - Number(delay) : score,
  }
}

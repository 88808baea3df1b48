/**
 * The key layout of one lock name, all under one {hash tag} so every key of
 * a name lives in one Redis Cluster slot and one script can touch them all.
 * See scripts/lib.lua for what each key holds.
 */
export interface LockKeys {
  readonly shared: string
  readonly token: string
  readonly line: string
  readonly lineInfo: string
  readonly exclusive: string
}

export function lockKeys(prefix: string, name: string): LockKeys {
  const base = `${prefix}:{${name}}:`
  return { shared: `${base}h`, token: `${base}t`, line: `${base}q`, lineInfo: `${base}qi`, exclusive: `${base}x` }
}

/** In the order the scripts that take them all declare them: KEYS[1..5]. */
export function keyList(keys: LockKeys): string[] {
  return [keys.shared, keys.token, keys.line, keys.lineInfo, keys.exclusive]
}

/**
 * The one waiting line of a Redlock name (scripts/redlock-line.lua), apart
 * from the node's own line keys so that no node ever hands the name over.
 */
export function redlockLineKeys(prefix: string, name: string): { line: string; lineInfo: string } {
  const base = `${prefix}:{${name}}:`
  return { line: `${base}rq`, lineInfo: `${base}rqi` }
}

/** SCAN pattern for the hold and line keys of names starting with `namePrefix`. */
export function scanPattern(prefix: string, namePrefix: string): string {
  return `${escapeGlob(prefix)}:{${escapeGlob(namePrefix)}*}:[hqx]`
}

/** The lock name inside a holders/line key, or undefined for other keys. */
export function nameOfKey(prefix: string, key: string): string | undefined {
  const start = `${prefix}:{`
  if (!key.startsWith(start)) return undefined
  const end = key.lastIndexOf('}:')
  return end > start.length ? key.slice(start.length, end) : undefined
}

/** The pub/sub channel on which the store wakes one client's waiters. */
export function wakeChannelPrefix(prefix: string): string {
  return `${prefix}:wake:`
}

function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&')
}

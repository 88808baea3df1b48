/**
 * The key layout of one lock name, all under one {hash tag} so every key of
 * a name lives in one Redis Cluster slot and one script can touch them all.
 * See scripts/lib.lua for what each key holds.
 */
export interface LockKeys {
  readonly holders: string
  readonly token: string
  readonly line: string
  readonly lineInfo: string
}

export function lockKeys(prefix: string, name: string): LockKeys {
  const base = `${prefix}:{${name}}:`
  return { holders: `${base}h`, token: `${base}t`, line: `${base}q`, lineInfo: `${base}qi` }
}

/** In the order every script declares them: KEYS[1..4]. */
export function keyList(keys: LockKeys): [string, string, string, string] {
  return [keys.holders, keys.token, keys.line, keys.lineInfo]
}

/** SCAN pattern for the holders and line keys of names starting with `namePrefix`. */
export function scanPattern(prefix: string, namePrefix: string): string {
  return `${escapeGlob(prefix)}:{${escapeGlob(namePrefix)}*}:[hq]`
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

import calculateSlot from 'cluster-key-slot'

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
 * keyList(lockKeys(prefix, name)) followed by `args`, as one array: the
 * argument list of a script that takes all five keys, built without the
 * intermediate object and arrays (it is made for every acquire and release).
 */
export function scriptArgv(prefix: string, name: string, args: readonly (string | number)[]): (string | number)[] {
  const base = `${prefix}:{${name}}:`
  const argv: (string | number)[] = [`${base}h`, `${base}t`, `${base}q`, `${base}qi`, `${base}x`]
  for (const arg of args) argv.push(arg)
  return argv
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

/** The pub/sub channel on which the store wakes one client's waiters (prefix + client id). */
export function wakeChannelPrefix(prefix: string): string {
  return `${prefix}:wake:`
}

/** A short hash tag for each cluster slot, found once by search (about 160,000 CRC16s of short strings). */
let slotTags: string[] | undefined

function slotTag(slot: number): string {
  if (!slotTags) {
    const tags: string[] = new Array(16384)
    let found = 0
    for (let i = 0; found < 16384; i++) {
      const tag = i.toString(36)
      const at = calculateSlot(tag)
      if (tags[at] === undefined) {
        tags[at] = tag
        found++
      }
    }
    slotTags = tags
  }
  return slotTags[slot]!
}

/** The cluster slot of every key of `name` (they share the {name} hash tag). */
export function slotOfName(name: string): number {
  return calculateSlot(name)
}

/**
 * Sharded pub/sub (Redis Cluster >= 7): a client's wake-up channel for the
 * names of one slot, `<prefix>:wake:{<tag of that slot>}:` + client id. A
 * script publishes in the slot of the keys it runs on, so SPUBLISH reaches
 * only that shard; a client subscribes once per slot it uses.
 */
export function shardedWakeChannelPrefix(prefix: string, slot: number): string {
  return `${prefix}:wake:{${slotTag(slot)}}:`
}

function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&')
}

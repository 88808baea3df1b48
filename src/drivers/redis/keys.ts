import calculateSlot from 'cluster-key-slot'

/**
 * The keys of one lock name all start with its base, "<prefix>:{<name>}:",
 * so they share one Redis Cluster slot (the {hash tag}) and one script can
 * touch them all. Scripts take the base as their only key and add the
 * suffixes themselves (scripts/basics.lua says what each key holds): one
 * short key to send instead of five.
 */
export function baseKey(prefix: string, name: string): string {
  return `${prefix}:{${name}}:`
}

/**
 * Every key suffix a script may touch under a name's base (scripts/basics.lua,
 * redlock-line.lua). On a Cluster the scripts declare them all (Scripts), not
 * only the base: a node whose slot is being migrated decides by the declared
 * keys whether it still serves a call (all of them here), asks the client to
 * try again (some moved already), or sends it to the importing node (none
 * here), so a script never runs on a node holding part of a name's state.
 */
export const NAME_KEY_SUFFIXES = ['x', 'h', 'd', 't', 'q', 'qi', 'o', 'rq', 'rqi'] as const

/**
 * The index of the names in use (scripts/keys.lua LISTED), which list reads
 * instead of scanning every idle name: one sorted set on a single Redis;
 * on a Cluster one per slot, in that slot (a script touches only its
 * name's slot), named by the slot's tag.
 */
export function listedKey(prefix: string, slot?: number): string {
  if (slot === undefined) return `${prefix}:names`
  const { head, tail } = listedKeyParts(prefix)
  return head + slotTag(slot) + tail
}

/**
 * On a Cluster, the index key of a slot is `head + <slot tag> + tail`
 * (listedKey): scripts/list-slots.lua builds the keys of many slots from
 * their tags (slotTags) rather than being sent every key whole.
 */
export function listedKeyParts(prefix: string): { head: string; tail: string } {
  return { head: `${prefix}:{`, tail: '}:names' }
}

/** On a Cluster, the index key a script on the name of `base` (baseKey) declares: the one of its slot. */
export function listedKeyOfBase(base: string): string {
  return listedKey(base.slice(0, base.indexOf(':{')), calculateSlot(base))
}

/** The hold key of a name: the exclusive hold, or the fencing counter while free (scripts/basics.lua). */
export function holdKey(prefix: string, name: string): string {
  return `${baseKey(prefix, name)}x`
}

/**
 * The one waiting line of a Redlock name (scripts/redlock-line.lua), apart
 * from the node's own line keys so that no node ever hands the name over.
 */
export function redlockLineKeys(prefix: string, name: string): { line: string; lineInfo: string } {
  const base = baseKey(prefix, name)
  return { line: `${base}rq`, lineInfo: `${base}rqi` }
}

/** The pub/sub channel on which the store wakes one client's waiters (prefix + client id). */
export function wakeChannelPrefix(prefix: string): string {
  return `${prefix}:wake:`
}

/** A short hash tag for each cluster slot, found once by search (about 160,000 CRC16s of short strings). */
let tagOfSlot: string[] | undefined

/** The hash tag of each of `slots` (listedKeyParts). */
export function slotTags(slots: readonly number[]): string[] {
  return slots.map(slotTag)
}

function slotTag(slot: number): string {
  if (!tagOfSlot) {
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
    tagOfSlot = tags
  }
  return tagOfSlot[slot]!
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

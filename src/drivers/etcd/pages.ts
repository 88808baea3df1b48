import type { Etcd3 } from 'etcd3'
import type { ListPage } from '../../core/driver.js'
import { compareNames, limitOf } from '../../core/list.js'
import { guarded, type EtcdTarget } from './connection.js'
import { prefixEnd } from './keys.js'

/** Keys per range request: a reply stays far below gRPC's 4 MB message limit. */
const RANGE_CHUNK = 5000

/** A key of a line as a range reads it (values are empty when read keys only). */
export interface RangeKv {
  readonly key: Buffer
  readonly value: Buffer
  readonly create_revision: string
  readonly lease: string
}

/** The part of a key after `<name>/` that makes it an entry of that name's line (baton's `<lease hex>.<id>`, etcd's election `<lease hex>`). */
const ENTRY_ID = /^[0-9a-f]+(\.[\w-]+)?$/

/** The name whose line `rest` (a key without the key prefix) belongs to, or undefined for a key of no line. */
export function nameOfKey(rest: string): string | undefined {
  const slash = rest.lastIndexOf('/')
  if (slash <= 0 || !ENTRY_ID.test(rest.slice(slash + 1))) return undefined
  return rest.slice(0, slash)
}

/**
 * The proper prefixes of `name`, at least `shortest` long, that key order may
 * put after it while name order puts them before: a name Q has its keys at
 * `Q/<id>`, so they come after every key of `Q<c>…` when the byte c is below
 * "/" (`a` after `a-b`), and may when c is "/" (`a/6…` after `a/0/…`, by the id).
 * Every byte of a multi-byte character is above "/", so code units tell.
 */
export function prefixesKeyOrderMayDelay(name: string, shortest: number): string[] {
  const prefixes: string[] = []
  for (let i = Math.max(1, shortest); i < name.length; i++) {
    if (name.charCodeAt(i) <= 0x2f) prefixes.push(name.slice(0, i))
  }
  return prefixes
}

/** Key ranges [from, to), sorted and merged where they overlap or touch. */
function merged(ranges: [Buffer, Buffer][]): [Buffer, Buffer][] {
  const out: [Buffer, Buffer][] = []
  for (const [from, to] of ranges.filter(([f, t]) => Buffer.compare(f, t) < 0).sort((a, b) => Buffer.compare(a[0], b[0]))) {
    const last = out.at(-1)
    if (last && Buffer.compare(from, last[1]) <= 0) {
      if (Buffer.compare(to, last[1]) > 0) last[1] = to
    } else out.push([from, to])
  }
  return out
}

/** A page's names in name order, each name's keys, and the revision they were all read at. */
export interface PageRead {
  readonly names: string[]
  readonly keysOf: ReadonlyMap<string, RangeKv[]>
  readonly revision: bigint
}

/**
 * Reads a page of lines in key order from its cursor, a chunk at a time,
 * until it has seen the page's number of names: about a page's worth, not
 * every name after the cursor. Key order is name order but for the prefixes
 * (prefixesKeyOrderMayDelay) of the names read, and for the last names read,
 * whose keys may go on after the chunk: their own keys after it are found
 * in the few key ranges that can hold them, read keys only.
 */
export class EtcdPages {
  constructor(private readonly client: Etcd3, private readonly target: EtcdTarget) {}

  async read(prefix: string, page?: ListPage): Promise<PageRead> {
    const keyPrefix = this.target.keyPrefix
    const base = keyPrefix + prefix
    const after = page?.after
    const limit = limitOf(page)
    const inPage = (name: string) => name.startsWith(prefix) && (after === undefined || compareNames(name, after) > 0)
    const keysOf = new Map<string, RangeKv[]>()
    const add = (kv: RangeKv): boolean => {
      const name = nameOfKey(kv.key.toString().slice(keyPrefix.length))
      if (name === undefined || !inPage(name)) return false
      const kvs = keysOf.get(name)
      if (!kvs) keysOf.set(name, [kv])
      else if (!kvs.some((k) => k.key.equals(kv.key))) kvs.push(kv)
      return !kvs
    }
    // A name after the cursor has its keys after `<keyPrefix><after>`: `<after><c>…/` or later.
    const start = Buffer.from(after !== undefined && compareNames(after, prefix) > 0 ? keyPrefix + after : base)
    // Twice the page (and one): most names have one key, a few their waiters' too.
    const chunk = Number.isFinite(limit) ? Math.min(RANGE_CHUNK, 2 * limit + 1) : RANGE_CHUNK
    let seen = 0
    let revision: bigint | undefined
    let last: Buffer | undefined
    for (let from = start; seen < limit;) {
      const reply = await this.range(from, prefixEnd(base), chunk, false, revision)
      revision ??= reply.revision
      for (const kv of reply.kvs) if (add(kv)) seen++
      if (!reply.more) {
        last = undefined
        break
      }
      last = reply.kvs.at(-1)!.key
      from = Buffer.concat([last, Buffer.from([0])])
    }
    if (last) await this.readDelayed(keysOf, last, prefix, limit, inPage, add, revision!)
    const names = [...keysOf.keys()].sort(compareNames).slice(0, limit)
    return { names, keysOf, revision: revision ?? 0n }
  }

  /**
   * The keys after `last` of the names that may belong on the page: the
   * prefixes key order may put later, and the page's names whose keys may go
   * on after `last`. Each has its own keys under `<name>/` starting with a hex
   * digit: read those ranges after `last`, keys only, then the values of the
   * names' own keys among them (few or none).
   */
  private async readDelayed(
    keysOf: Map<string, RangeKv[]>, last: Buffer, prefix: string, limit: number,
    inPage: (name: string) => boolean, add: (kv: RangeKv) => boolean, revision: bigint,
  ): Promise<void> {
    const unsure = new Set<string>()
    for (const name of [...keysOf.keys()].sort(compareNames).slice(0, limit)) {
      for (const earlier of prefixesKeyOrderMayDelay(name, prefix.length)) if (!keysOf.has(earlier) && inPage(earlier)) unsure.add(earlier)
      if (last.toString().startsWith(`${this.target.keyPrefix}${name}/`)) unsure.add(name)
    }
    if (unsure.size === 0) return
    const past = Buffer.concat([last, Buffer.from([0])])
    const later = (key: Buffer) => (Buffer.compare(key, past) < 0 ? past : key)
    const ranges = merged([...unsure].flatMap((name) => {
      const own = `${this.target.keyPrefix}${name}/`
      return [[later(Buffer.from(own + '0')), Buffer.from(own + ':')], [later(Buffer.from(own + 'a')), Buffer.from(own + 'g')]] as [Buffer, Buffer][]
    }))
    const found = (await Promise.all(ranges.map(([from, to]) => this.rangeAll(from, to, revision)))).flat()
      .filter((kv) => unsure.has(nameOfKey(kv.key.toString().slice(this.target.keyPrefix.length)) ?? ''))
    const replies = await Promise.all(found.map((kv) => this.range(kv.key, undefined, 1, false, revision)))
    for (const reply of replies) for (const kv of reply.kvs) add(kv)
  }

  /** Every key of [from, to) at `revision`, keys only, a chunk at a time. */
  private async rangeAll(from: Buffer, to: Buffer, revision: bigint): Promise<RangeKv[]> {
    const kvs: RangeKv[] = []
    for (let at = from; ;) {
      const reply = await this.range(at, to, RANGE_CHUNK, true, revision)
      kvs.push(...reply.kvs)
      if (!reply.more) return kvs
      at = Buffer.concat([reply.kvs.at(-1)!.key, Buffer.from([0])])
    }
  }

  private async range(key: Buffer, end: Buffer | undefined, limit: number, keysOnly: boolean, revision: bigint | undefined) {
    const reply = await guarded(this.target, this.client.kv.range({
      key, ...(end ? { range_end: end } : {}), limit, ...(keysOnly ? { keys_only: true } : {}),
      ...(revision !== undefined ? { revision: String(revision) } : {}),
    }))
    return { kvs: reply.kvs as RangeKv[], more: reply.more && reply.kvs.length > 0, revision: BigInt(reply.header.revision) }
  }
}

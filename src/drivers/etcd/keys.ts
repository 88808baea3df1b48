import type { Etcd3, IRangeRequest } from 'etcd3'
import { decodeCandidateValue, decodeEntry, type LineEntry } from '../sequenced/line.js'
import { guarded, type EtcdTarget } from './connection.js'

/** A line read and the revision it was read at (a waiter stands behind it, see WakeUps.standBehind). */
export interface LineMarker {
  readonly line: readonly LineEntry[]
  readonly revision: bigint
}

/** A name's line as read: its entries in order, the lease of each key, the revision. */
export interface LineRead {
  readonly line: LineEntry[]
  readonly leases: Map<string, string>
  readonly revision: bigint
}

/**
 * The key layout of names and their lines (`<keyPrefix><name>/<lease hex>.<hold id>`,
 * in create-revision order) and reading them. Knows this client's election
 * candidates by their keys: their values are bare (etcd's election layout).
 */
export class Lines {
  /** Keys of this client's election candidates → their owners: their values are bare, so parse knows them by key. */
  readonly candidates = new Map<string, string>()

  constructor(private readonly client: Etcd3, private readonly target: EtcdTarget) {}

  prefix(name: string): string {
    return `${this.target.keyPrefix}${name}/`
  }

  range(name: string): IRangeRequest {
    const prefix = this.prefix(name)
    return { key: Buffer.from(prefix), range_end: prefixEnd(prefix), sort_order: 'Ascend', sort_target: 'Create' }
  }

  async read(name: string): Promise<LineRead> {
    const reply = await guarded(this.target, this.client.kv.range(this.range(name)))
    return this.parse(name, reply.kvs, BigInt(reply.header.revision))
  }

  /** Keys of deeper names (`<name>/sub/…`) share the range but not the line. */
  parse(name: string, kvs: readonly { key: Buffer; value: Buffer; create_revision: string; lease: string }[], revision: bigint): LineRead {
    const prefix = this.prefix(name)
    const line: LineEntry[] = []
    const leases = new Map<string, string>()
    for (const kv of kvs) {
      const key = kv.key.toString()
      const rest = key.slice(prefix.length)
      if (rest.includes('/')) continue
      const raw = kv.value.toString()
      const candidate = this.candidates.get(key)
      const foreignOwner = `etcd-lease:${rest}`
      // A bare value: this client's candidate (known by its key), or etcd's
      // election layout / another program's lock, whose value is shown as is.
      const entry = candidate !== undefined
        ? { id: key, token: BigInt(kv.create_revision), owner: candidate, kind: 'mutex' as const, mode: 'exclusive' as const, permits: 1, weight: 1, fair: true, value: decodeCandidateValue(raw) }
        : decodeEntry(key, BigInt(kv.create_revision), raw, foreignOwner)
      line.push(entry.owner === foreignOwner ? { ...entry, value: decodeCandidateValue(raw) } : entry)
      leases.set(key, kv.lease)
    }
    return { line, leases, revision }
  }
}

/** A key nobody writes, watched to keep etcd3's watch stream open. */
export function idleKey(target: EtcdTarget): string {
  return `${target.keyPrefix}\u0000baton/idle`
}

/** The end of etcd's range for every key starting with `prefix`. */
export function prefixEnd(prefix: string): Buffer {
  const end = Buffer.from(prefix)
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i] = end[i]! + 1
      return end.subarray(0, i + 1)
    }
  }
  return Buffer.from([0])
}

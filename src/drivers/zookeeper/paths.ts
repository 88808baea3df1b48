import type { Stat } from 'node-zookeeper-client'
import { decodeEntry, type LineEntry } from '../sequenced/line.js'

/** Every lock's parent node lives under this node (below the URL's chroot). */
export const ROOT = '/baton'
/** The alive markers of holds with a lock delay (see aliveMarkerOf). */
export const ALIVE_ROOT = '/baton-alive'
/** ZooKeeper's sequence suffix: 10 digits. */
export const SEQUENCE = /-(\d{10})$/

/**
 * The lines of names as ZooKeeper keeps them: one parent node per name, one
 * child per entry, `<spec>|<owner>-<sequence>`. A write entry's mode is in its
 * name, which can not change: its data set again (version above 0) says it
 * was downgraded, which this client remembers once seen.
 */
export class ZkLines {
  /** Write nodes seen downgraded (their data was set again: version > 0): they block writers only. */
  readonly downgraded = new Set<string>()

  /** Children → line in sequence order. Entries of other recipes count as exclusive holders. */
  parse(parent: string, children: readonly string[]): LineEntry[] {
    const line: { entry: LineEntry; sequence: number }[] = []
    for (const child of children) {
      const sequence = SEQUENCE.exec(child)
      if (!sequence) continue
      const path = `${parent}/${child}`
      const entry = decodeEntry(path, 0n, child.slice(0, -11), `zk-node:${child}`)
      line.push({ entry: this.downgraded.has(path) && entry.mode === 'write' ? { ...entry, mode: 'read' } : entry, sequence: Number(sequence[1]) })
    }
    return line.sort((a, b) => a.sequence - b.sequence).map((l) => l.entry)
  }
}

/** One path segment per name: '/' and '.' escaped, so names never nest and never collide. */
export function parentOf(name: string): string {
  return `${ROOT}/${encodeURIComponent(name).replace(/\./g, '%2E')}`
}

/** The alive marker of `owner`'s entry for `name`: one flat node per entry, under one persistent parent. */
export function aliveMarkerOf(name: string, owner: string): string {
  return `${ALIVE_ROOT}/${parentOf(name).slice(ROOT.length + 1)}@${encodeURIComponent(owner)}`
}

export function nameOf(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment)
  } catch {
    return undefined
  }
}

/**
 * The fencing token of entry `child`: its parent's creation zxid plus its
 * sequence number, known from the create's reply and the line read without
 * an extra request. Strictly increasing for the name:
 * - within one parent, sequence numbers increase in creation order;
 * - the sequence is the parent's cversion at the create, and every step of
 *   the cversion was a child create or delete in that parent, each a
 *   transaction with its own zxid after the parent's creation zxid p. So an
 *   entry with sequence k has p + k < its own creation zxid <= the last zxid
 *   of that parent; a parent made again after it was removed (empty, so
 *   holding nothing) has a creation zxid p' above every zxid before it, so
 *   p' + 0 > p + k for every earlier entry. zxids never go back.
 */
export function tokenOf(parentStat: Stat, child: string): bigint {
  return parentStat.czxid.readBigInt64BE(0) + BigInt(SEQUENCE.exec(child)![1]!)
}

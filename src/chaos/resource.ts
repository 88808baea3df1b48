/**
 * The fenced resources a run writes to, kept by the process that checks the
 * run (the chaos runner, `baton verify`) and stamped on its clock: each
 * answer is recorded as a `write` event of the history.
 */
import { historyNow, type Actor, type Write } from './history.js'

/** Refuses, per name, a token below the highest it accepted (as baton/fencing's guards do). */
export class FencedNames {
  private readonly highest = new Map<string, bigint>()

  write(by: Actor & { readonly lease: string }, name: string, token: bigint): Write {
    const before = this.highest.get(name)
    const accepted = before === undefined || token >= before
    if (accepted) this.highest.set(name, token)
    return { type: 'write', process: by.process, client: by.client, lease: by.lease, name, token: String(token), at: historyNow(), accepted, highestBefore: before === undefined ? null : String(before) }
  }
}

/**
 * A counter its holders read and then write (value + 1) with their token.
 * Fenced, it refuses a token below the highest it has seen on reads as on
 * writes, and a read advances the fence as a write does: fencing writes
 * alone would let an old holder's last write land between a newer holder's
 * read and write (a lost update), so a fenced read-modify-write fences its
 * read too (with baton/fencing: the read in the same fenced transaction or
 * script as the write). Unfenced, it accepts everything: what a lock alone
 * can not prevent.
 */
export class FencedCounter {
  value = 0
  version = 0
  highest: bigint | undefined
  /** Reads refused for a stale token. */
  staleReads = 0

  constructor(readonly name: string, readonly fencing: boolean) {}

  read(token: bigint): { accepted: boolean; value: number; version: number } {
    if (this.fencing) {
      if (this.highest !== undefined && token < this.highest) {
        this.staleReads++
        return { accepted: false, value: this.value, version: this.version }
      }
      this.highest = token
    }
    return { accepted: true, value: this.value, version: this.version }
  }

  write(by: Actor & { readonly lease: string }, token: bigint, value: number, readVersion: number, at = historyNow()): Write {
    const stale = this.highest !== undefined && token < this.highest
    const accepted = !(this.fencing && stale)
    const write: Write = {
      type: 'write', process: by.process, client: by.client, lease: by.lease, name: this.name, token: String(token), at, accepted,
      highestBefore: this.highest === undefined ? null : String(this.highest), readVersion, versionAtWrite: this.version,
    }
    if (accepted) {
      this.value = value
      this.version++
      if (this.highest === undefined || token > this.highest) this.highest = token
    }
    return write
  }
}

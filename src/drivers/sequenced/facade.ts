import type {
  AcquireRequest, AcquireResult, AttemptSpec, Capabilities, Driver, ExtendResult, HoldRef, ListPage, LockInfo, Wake,
} from '../../core/driver.js'

/** Holds and waiters of a sequenced-line store, with the wake-up routes of their owners. */
export interface HoldsPart extends Required<Pick<Driver, 'acquire' | 'extend' | 'release' | 'downgrade'>> {
  readonly slots: { watch(owner: string, onWake: (wake: Wake) => void): () => void }
}

/**
 * A driver of a sequenced-line store (etcd, ZooKeeper): the facade of its
 * parts, each with one reason to change (holds and line, elections, inspect
 * and list); the store's own driver builds them and adds forceRelease and close.
 */
export abstract class SequencedDriver implements Driver {
  abstract readonly store: string
  abstract readonly capabilities: Capabilities
  protected abstract readonly holds: HoldsPart
  protected abstract readonly elections: Required<Pick<Driver, 'proclaim' | 'observe'>>
  protected abstract readonly inspector: Pick<Driver, 'inspect' | 'list'>

  acquire(request: AcquireRequest): Promise<AcquireResult> {
    return this.holds.acquire(request)
  }

  extend(holds: readonly HoldRef[], ttlMs: number): Promise<ExtendResult[]> {
    return this.holds.extend(holds, ttlMs)
  }

  release(hold: HoldRef | AttemptSpec): Promise<boolean> {
    return this.holds.release(hold)
  }

  downgrade(hold: HoldRef): Promise<boolean> {
    return this.holds.downgrade(hold)
  }

  watch(_name: string, owner: string, onWake: (wake: Wake) => void): () => void {
    return this.holds.slots.watch(owner, onWake)
  }

  proclaim(hold: HoldRef, value: string): Promise<boolean> {
    return this.elections.proclaim(hold, value)
  }

  observe(name: string, onChange: () => void): () => void {
    return this.elections.observe(name, onChange)
  }

  inspect(name: string): Promise<LockInfo | null> {
    return this.inspector.inspect(name)
  }

  list(prefix: string, page?: ListPage): AsyncIterable<LockInfo> {
    return this.inspector.list(prefix, page)
  }

  abstract forceRelease(name: string): Promise<boolean>
  abstract close(): Promise<void>
}

import type { AcquireRequest, LockSpec } from '../../core/driver.js'
import type { RedisDriver } from '../redis/index.js'
import { lockKeys, redlockLineKeys } from '../redis/keys.js'

/** Where this client's waiting owner stands in the line, as last seen. */
export interface LineSpot {
  rank: number
  /** The line node told it to try again since its last attempt. */
  woken: boolean
  readonly node: number
}

export interface LinePlace {
  /** Live entries ahead of the owner (all of them when it is not in line). */
  readonly rank: number
  /** Nobody holds the name on the line node. */
  readonly free: boolean
  readonly length: number
}

/**
 * The one waiting line of a Redlock name, on the line node
 * (redis/scripts/redlock-line.lua): join, peek, leave, wake the head.
 */
export class Line {
  constructor(private readonly keyPrefix: string, private readonly channelPrefix: string) {}

  private keys(name: string): string[] {
    const hold = lockKeys(this.keyPrefix, name)
    const line = redlockLineKeys(this.keyPrefix, name)
    return [hold.exclusive, hold.shared, line.line, line.lineInfo]
  }

  /** Joins or refreshes (`join`), or only looks: rank, whether the name is free there, and the line's length. */
  async place(driver: RedisDriver, request: AcquireRequest, join: boolean): Promise<LinePlace> {
    const ttl = Math.max(1, Math.ceil(request.queueTtlMs || request.ttlMs))
    const [rank, free, length] = (await driver.script('redlockLine', request.name, this.keys(request.name), [
      join ? 'join' : 'peek', request.owner, ttl, this.channelPrefix,
    ])) as [number, number, number]
    return { rank: Number(rank), free: Number(free) === 1, length: Number(length) }
  }

  leave(driver: RedisDriver, spec: LockSpec & { readonly owner: string }): Promise<unknown> {
    return driver.script('redlockLine', spec.name, this.keys(spec.name), ['leave', spec.owner, 0, this.channelPrefix])
  }

  /** Tells the head of the line to try again. */
  wake(driver: RedisDriver, name: string): Promise<unknown> {
    return driver.script('redlockLine', name, this.keys(name), ['wake', '', 0, this.channelPrefix])
  }

  /** Tells every waiter to try again (after a forced release). */
  wakeAll(driver: RedisDriver, name: string): Promise<unknown> {
    return driver.script('redlockLine', name, this.keys(name), ['wakeAll', '', 0, this.channelPrefix])
  }

  async list(driver: RedisDriver, name: string): Promise<string[]> {
    return (await driver.script('redlockLine', name, this.keys(name), ['list', '', 0, this.channelPrefix])) as string[]
  }
}

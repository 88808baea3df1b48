import type { AcquireRequest, HoldMode, LockSpec, WaiterSummary } from '../../core/driver.js'
import type { RedisDriver } from '../redis/index.js'

/** Where this client's waiting owner stands in the line, as last seen. */
export interface LineSpot {
  /** Entries ahead that it must let go first (LinePlace.ahead). */
  rank: number
  /** The line node told it to try again since its last attempt. */
  woken: boolean
  readonly node: number
  /**
   * Attempts in a row that found the name free on the line node but not on
   * a majority (Waiting.busy): each waits longer before the next.
   */
  stalls?: number
}

export interface LinePlace {
  /**
   * Live entries ahead of the owner that it must let go first: all of them
   * for a mutex or a writer, the writers among them for a reader (0 or 1);
   * the whole line when the owner is not in it.
   */
  readonly rank: number
  /** Nothing on the line node blocks the owner's mode. */
  readonly free: boolean
  readonly length: number
}

/** A line entry's mode letter (the line keeps x, r or w per waiter). */
const LETTER: Record<HoldMode, string> = { exclusive: 'x', read: 'r', write: 'w', permit: 'x' }
const MODE: Record<string, HoldMode> = { x: 'exclusive', r: 'read', w: 'write' }

/**
 * The one waiting line of a Redlock name, on the line node
 * (redis/scripts/redlock-line.lua): join, peek, leave, wake the head.
 */
export class Line {
  constructor(private readonly channelPrefix: string) {}

  /** Joins or refreshes (`join`), or only looks: what is ahead, whether the name is free there, and the line's length. */
  async place(driver: RedisDriver, request: AcquireRequest, join: boolean): Promise<LinePlace> {
    const ttl = Math.max(1, Math.ceil(request.queueTtlMs || request.ttlMs))
    const [rank, free, length] = (await driver.call('redlockLine', request.name, [
      join ? 'join' : 'peek', request.owner, ttl, this.channelPrefix, LETTER[request.mode], 0, request.description ?? '',
    ])) as [number, number, number]
    return { rank: Number(rank), free: Number(free) === 1, length: Number(length) }
  }

  leave(driver: RedisDriver, spec: LockSpec & { readonly owner: string }): Promise<unknown> {
    return driver.call('redlockLine', spec.name, ['leave', spec.owner, 0, this.channelPrefix, 'x'])
  }

  /**
   * Ends `member`'s hold on the line node and, only when someone waits,
   * wakes the head of the line: one call where a release plus a wake-up
   * took two. `guess`: the member's token is a guess; where it does not
   * match, the hold of the member's owner is ended whatever its token.
   */
  async release(driver: RedisDriver, name: string, member: string, guess = false): Promise<boolean> {
    return Number(await driver.call('redlockLine', name, ['release', member, guess ? 1 : 0, this.channelPrefix, 'x', driver.fenceTtl])) === 1
  }

  /** Tells the head of the line (and the readers right behind a reader head) to try again. */
  wake(driver: RedisDriver, name: string): Promise<unknown> {
    return driver.call('redlockLine', name, ['wake', '', 0, this.channelPrefix, 'x'])
  }

  /** Tells every waiter to try again (after a forced release). */
  wakeAll(driver: RedisDriver, name: string): Promise<unknown> {
    return driver.call('redlockLine', name, ['wakeAll', '', 0, this.channelPrefix, 'x'])
  }

  /** The live waiters in line order, with the mode each waits for. */
  async list(driver: RedisDriver, name: string): Promise<WaiterSummary[]> {
    const flat = (await driver.call('redlockLine', name, ['list', '', 0, this.channelPrefix, 'x'])) as string[]
    const waiters: WaiterSummary[] = []
    for (let i = 0; i < flat.length; i += 4) {
      const description = flat[i + 2]
      const since = Number(flat[i + 3])
      waiters.push({
        owner: flat[i]!, mode: MODE[flat[i + 1]!] ?? 'exclusive',
        ...(description ? { description } : {}), ...(since > 0 ? { since } : {}),
      })
    }
    return waiters
  }
}

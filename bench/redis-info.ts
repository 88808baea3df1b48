import { Redis } from 'ioredis'
import { wallNow } from './util.js'

/**
 * Commands this process's ioredis clients sent (every contender talks to Redis
 * through ioredis), INFO excluded. Counted at Redis.prototype.sendCommand, so
 * a NOSCRIPT → EVAL resend counts as the two commands it is. Used instead of
 * INFO's total_commands_processed, which on Redis 7 also counts every call a
 * script makes (checked: EVAL with 4 redis.call() adds 5).
 */
export const sentCommands = { count: 0 }
let counting = false

export function countSentCommands(): void {
  if (counting) return
  counting = true
  type Send = (this: Redis, command: { name: string }, ...rest: unknown[]) => unknown
  const proto = Redis.prototype as unknown as { sendCommand: Send }
  const original = proto.sendCommand
  proto.sendCommand = function (command, ...rest) {
    if (command.name !== 'info') sentCommands.count++
    return original.call(this, command, ...rest)
  }
}

/** Counters from one `INFO stats commandstats` call. */
export interface CommandSnapshot {
  /** wallNow() just before the INFO was sent. */
  at: number
  /** total_commands_processed (on Redis 7 this includes the calls scripts make). */
  total: number
  /** sentCommands.count when the INFO was sent. */
  sent: number
  /** Sum of calls= over commandstats (includes calls made inside scripts), without INFO itself. */
  calls: number
  perCommand: Map<string, number>
}

export async function commandSnapshot(admin: Redis): Promise<CommandSnapshot> {
  const at = wallNow()
  const sent = sentCommands.count
  const text = String(await admin.call('INFO', 'stats', 'commandstats'))
  const total = Number(/^total_commands_processed:(\d+)/m.exec(text)?.[1] ?? NaN)
  const perCommand = new Map<string, number>()
  let calls = 0
  for (const match of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    const name = match[1]!
    const n = Number(match[2])
    perCommand.set(name, n)
    if (name !== 'info') calls += n
  }
  return { at, total, sent, calls, perCommand }
}

export function diffSnapshots(a: CommandSnapshot, b: CommandSnapshot): { total: number; sent: number; calls: number; perCommand: Map<string, number> } {
  const perCommand = new Map<string, number>()
  for (const [name, n] of b.perCommand) {
    const d = n - (a.perCommand.get(name) ?? 0)
    if (d > 0 && name !== 'info') perCommand.set(name, d)
  }
  return { total: b.total - a.total, sent: b.sent - a.sent, calls: b.calls - a.calls, perCommand }
}

export async function usedMemory(admin: Redis): Promise<number> {
  const text = String(await admin.call('INFO', 'memory'))
  return Number(/^used_memory:(\d+)/m.exec(text)?.[1] ?? NaN)
}

export async function redisVersion(admin: Redis): Promise<string> {
  const text = String(await admin.call('INFO', 'server'))
  return /^redis_version:(.+)$/m.exec(text)?.[1]?.trim() ?? '?'
}

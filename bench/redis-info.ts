import type { Redis } from 'ioredis'
import { wallNow } from './util.js'

/** Counters from one `INFO stats commandstats` call. */
export interface CommandSnapshot {
  /** wallNow() just before the INFO was sent. */
  at: number
  /** total_commands_processed: commands clients sent (not calls inside scripts). */
  total: number
  /** Sum of calls= over commandstats (includes calls made inside scripts), without INFO itself. */
  calls: number
  perCommand: Map<string, number>
}

export async function commandSnapshot(admin: Redis): Promise<CommandSnapshot> {
  const at = wallNow()
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
  return { at, total, calls, perCommand }
}

export function diffSnapshots(a: CommandSnapshot, b: CommandSnapshot): { total: number; calls: number; perCommand: Map<string, number> } {
  const perCommand = new Map<string, number>()
  for (const [name, n] of b.perCommand) {
    const d = n - (a.perCommand.get(name) ?? 0)
    if (d > 0 && name !== 'info') perCommand.set(name, d)
  }
  return { total: b.total - a.total, calls: b.calls - a.calls, perCommand }
}

export async function usedMemory(admin: Redis): Promise<number> {
  const text = String(await admin.call('INFO', 'memory'))
  return Number(/^used_memory:(\d+)/m.exec(text)?.[1] ?? NaN)
}

export async function redisVersion(admin: Redis): Promise<string> {
  const text = String(await admin.call('INFO', 'server'))
  return /^redis_version:(.+)$/m.exec(text)?.[1]?.trim() ?? '?'
}

import { US } from './name-state.js'
import type { Transactions } from './tx.js'

/** Most idle names one sweep looks at; a full batch runs the next sweep at once. */
const SWEEP_BATCH = 1000

/**
 * Bounded state: holds past their lock delay, stale line entries, and
 * names nobody held or awaited for ?fenceTtl= (their counters with them).
 * Like every operation, it locks the names first (skipping those in use).
 * Answers whether the batch was full (sql-common/sweeper.ts).
 */
export async function sweepIdle(transactions: Transactions, fenceTtlMs: number): Promise<boolean> {
  return transactions.transaction(async (tx) => {
    const [clock] = await tx.read<{ now_us: string }>('clock')
    const then = Number(clock!.now_us)
    const candidates = await tx.read<{ name: Buffer }>('sweep-candidates', [then - fenceTtlMs * US, then, then, SWEEP_BATCH])
    if (candidates.length === 0) return false
    const locked = await tx.read<{ name: Buffer; now_us: string }>('sweep-lock', [candidates.map((c) => c.name)])
    if (locked.length === 0) return false
    const now = Number(locked[0]!.now_us)
    const names = locked.map((l) => l.name)
    tx.write('sweep-drop', [now, names, now, now, names, now, names, now, names, now - fenceTtlMs * US, now])
    return candidates.length >= SWEEP_BATCH
  })
}

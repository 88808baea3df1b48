/**
 * Owner digests the server shows, mapped back to this process's owners, so
 * that inspect() shows a client its own holds under the owners it knows.
 * Process-wide: several clients of one process see each other's holds as
 * they would on any other store.
 */
export const ownersByDigest = new Map<string, string>()

/**
 * Digests reported lost before this process knew them: the event stream and
 * the answer with the grant travel on different connections, so a forced
 * release can overtake its grant. Kept for a while, then dropped.
 */
const lostEarly = new Map<string, number>()
const LOST_EARLY_MS = 60_000

export function noteLostEarly(digest: string): void {
  const now = Date.now()
  if (lostEarly.size > 10_000) for (const [d, at] of lostEarly) if (now - at > LOST_EARLY_MS) lostEarly.delete(d)
  lostEarly.set(digest, now)
}

/** Whether a loss of `digest` came before its grant (it is then forgotten: delivered once). */
export function takeLostEarly(digest: string): boolean {
  return lostEarly.delete(digest)
}

/**
 * How long before the store's deadline a hold counts as lost on the client.
 * It covers timer lateness, event-loop stalls and the delivery delay of a
 * hand-over message: 10 ms plus 1% of the ttl (Redlock's drift rule), and never
 * more than a quarter of the ttl so that short leases stay usable.
 */
export function safetyMarginMs(ttlMs: number): number {
  return Math.min(Math.floor(ttlMs / 4), 10 + Math.ceil(ttlMs * 0.01))
}

/** How long an idempotent acquire's outcome is remembered, and at most how many. */
export const REQUEST_WINDOW_MS = 10 * 60_000
export const REQUEST_WINDOW_SIZE = 100_000

/**
 * The tokens granted to idempotent acquires (by their request-derived
 * owner), for a bounded window: a duplicate of a request whose lease has
 * ended is answered 410, never a second hold that nobody would release.
 * Oldest entries go first (a Map keeps insertion order).
 */
export class RequestWindow {
  private readonly granted = new Map<string, { token: bigint; at: number }>()

  constructor(private readonly windowMs = REQUEST_WINDOW_MS, private readonly size = REQUEST_WINDOW_SIZE) {}

  remember(owner: string, token: bigint): void {
    this.granted.delete(owner)
    this.granted.set(owner, { token, at: Date.now() })
    this.prune()
  }

  /** The token this request's owner was granted within the window, if any. */
  tokenOf(owner: string): bigint | undefined {
    this.prune()
    return this.granted.get(owner)?.token
  }

  private prune(): void {
    const oldest = Date.now() - this.windowMs
    for (const [owner, entry] of this.granted) {
      if (entry.at >= oldest && this.granted.size <= this.size) break
      this.granted.delete(owner)
    }
  }
}

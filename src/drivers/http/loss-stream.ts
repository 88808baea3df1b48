import { Api } from './api.js'
import { readEvents } from './sse.js'

/** How long the stream stays open after the last hold ends, so acquire/release loops do not reconnect each time. */
const LINGER_MS = 10_000
const RETRY_MS = 500

/**
 * One server-sent-event stream of `lost` events per client, open while the
 * client holds something: a forced release on the server reaches the
 * holder's lease.signal within a round trip, not at the next renewal. The
 * events show owner digests; `onLost` gets the digest and matches its own.
 */
export class LossStream {
  private controller: AbortController | undefined
  private linger: NodeJS.Timeout | undefined
  private closed = false
  /** Resolves once the current stream is open, so the first hold is covered from its start. */
  opened: Promise<void> = Promise.resolve()

  /** The last stream dropped while needed: events sent until the next one opens may be lost. */
  private dropped = false

  constructor(
    private readonly api: Api,
    private readonly onLost: (digest: string, reason: string) => void,
    /** A stream opened again after one dropped: every hold re-checks (its loss event may have been missed). */
    private readonly onReopened: () => void = () => undefined,
  ) {}

  need(wanted: boolean): void {
    if (this.closed) return
    clearTimeout(this.linger)
    if (wanted) {
      if (!this.controller) this.open()
      return
    }
    this.linger = setTimeout(() => this.stop(), LINGER_MS)
    this.linger.unref()
  }

  close(): void {
    this.closed = true
    clearTimeout(this.linger)
    this.stop()
  }

  private stop(): void {
    this.controller?.abort()
    this.controller = undefined
  }

  private open(): void {
    const controller = new AbortController()
    this.controller = controller
    let markOpen!: () => void
    this.opened = new Promise((resolve) => (markOpen = resolve))
    void this.run(controller, markOpen).finally(() => {
      markOpen()
      if (this.controller !== controller) return
      // Dropped by the server or the network: reconnect while still needed.
      this.controller = undefined
      this.dropped = true
      const again = setTimeout(() => {
        if (!this.closed && !this.controller) this.open()
      }, RETRY_MS)
      again.unref()
    })
  }

  private async run(controller: AbortController, markOpen: () => void): Promise<void> {
    try {
      const response = await this.api.fetch('/v1/events?types=lost', {
        method: 'GET',
        headers: this.api.headers({ accept: 'text/event-stream' }),
        signal: controller.signal,
      })
      if (!response.ok || !response.body) return
      markOpen()
      if (this.dropped) {
        this.dropped = false
        this.onReopened()
      }
      for await (const { data } of readEvents(response.body)) {
        if (!data) continue
        const event = JSON.parse(data) as { owner: string; name: string }
        this.onLost(event.owner, `the baton server reports it lost (released by force, or taken over)`)
      }
    } catch {
      // Aborted or dropped: the caller reconnects if still needed.
    }
  }
}

import { Observers } from '../../core/observers.js'
import { Api } from './api.js'
import { readEvents } from './sse.js'

const RETRY_MS = 500

/**
 * One server-sent-event stream per observed election name
 * (GET /v1/elections/{name}/events): each `leader` event, and each
 * (re)opening of the stream (events sent while it was down are missed),
 * becomes a notice for Driver.observe; the core then re-reads the name. The
 * server follows the leader with its own store's notices, so nothing here
 * polls. A dropped stream is opened again after a short pause until closed.
 */
export class LeaderStream {
  private controller: AbortController | undefined
  private closed = false

  constructor(private readonly api: Api, private readonly name: string, private readonly onNotice: () => void) {
    this.open()
  }

  close(): void {
    this.closed = true
    this.controller?.abort()
    this.controller = undefined
  }

  private open(): void {
    const controller = new AbortController()
    this.controller = controller
    void this.run(controller).finally(() => {
      if (this.closed || this.controller !== controller) return
      this.controller = undefined
      const again = setTimeout(() => {
        if (!this.closed && !this.controller) this.open()
      }, RETRY_MS)
      again.unref()
    })
  }

  private async run(controller: AbortController): Promise<void> {
    try {
      const response = await this.api.fetch(`/v1/elections/${encodeURIComponent(this.name)}/events`, {
        method: 'GET',
        headers: this.api.headers({ accept: 'text/event-stream' }),
        signal: controller.signal,
      })
      if (response.status >= 400 && response.status < 500 && response.status !== 429) {
        // Refused (the server's store offers no election, or no right to read the name): not worth asking again.
        this.closed = true
        await response.body?.cancel().catch(() => {})
        return
      }
      if (!response.ok || !response.body) return
      // Open: whatever changed while no stream was open is read again now.
      this.onNotice()
      for await (const event of readEvents(response.body)) {
        if (event.type === 'leader') this.onNotice()
      }
    } catch {
      // Aborted or dropped: opened again unless closed.
    }
  }
}

/** The leader streams of one client: one per observed name, shared by its observers, closed with the last. */
export class LeaderStreams {
  private readonly observers = new Observers()
  private readonly streams = new Map<string, LeaderStream>()

  constructor(private readonly api: Api) {}

  observe(name: string, onChange: () => void): () => void {
    return this.observers.add(
      name, onChange,
      () => this.streams.set(name, new LeaderStream(this.api, name, () => this.observers.notify(name))),
      () => {
        this.streams.get(name)?.close()
        this.streams.delete(name)
      },
    )
  }

  close(): void {
    for (const stream of this.streams.values()) stream.close()
    this.streams.clear()
    this.observers.clear()
  }
}

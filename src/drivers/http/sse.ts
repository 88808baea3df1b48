/** One server-sent event, as the baton server writes them: its `event:` type and `data:` line. */
export interface SseEvent {
  readonly type: string | undefined
  readonly data: string | undefined
}

/**
 * The events of a text/event-stream body, in order, as they arrive. Both
 * streams the http:// driver keeps open (loss notices, leader changes) read
 * their body with it; a comment (heartbeat) comes out as an event without
 * type or data.
 */
export async function* readEvents(body: AsyncIterable<Uint8Array>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder()
  let buffered = ''
  for await (const chunk of body) {
    buffered += decoder.decode(chunk, { stream: true })
    let end: number
    while ((end = buffered.indexOf('\n\n')) >= 0) {
      const lines = buffered.slice(0, end).split('\n')
      buffered = buffered.slice(end + 2)
      yield {
        type: lines.find((l) => l.startsWith('event: '))?.slice(7),
        data: lines.find((l) => l.startsWith('data: '))?.slice(6),
      }
    }
  }
}

// The server's events stream, read with fetch (EventSource cannot send an
// Authorization header): reconnects with backoff, parses the SSE frames, and
// queues each event for the next frame.
import { sync } from './load.js'
import { schedule } from './schedule.js'
import { state } from './state.js'
import { needToken, setConnection, setOnline } from './status.js'

const EVENT_TYPES = ['grant', 'release', 'expire', 'lost', 'forced']

function receive(event) {
  if (typeof event.at === 'number') {
    const offset = event.at - Date.now()
    // The smallest delivery delay gives the best estimate; drift slowly otherwise.
    state.clockOffset = !state.clockKnown || offset > state.clockOffset ? offset : state.clockOffset * 0.99 + offset * 0.01
    state.clockKnown = true
  }
  state.queue.push(event)
  schedule()
}

/** Reads the SSE stream with fetch, so it can carry the Authorization header. */
export async function stream(generation) {
  for (let attempt = 0; generation === state.generation; attempt++) {
    const abort = new AbortController()
    state.stream = abort
    try {
      const headers = { accept: 'text/event-stream' }
      if (state.token) headers.authorization = `Bearer ${state.token}`
      const res = await fetch('/v1/events', { headers, signal: abort.signal, cache: 'no-store' })
      if (res.status === 401 || res.status === 403) return needToken(res.status)
      if (!res.ok || !res.body) throw new Error(`events: ${res.status}`)
      setConnection('live', 'live')
      setOnline(true)
      if (attempt > 0) void sync(false).catch(() => undefined)
      attempt = 0
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader()
      let buffer = ''
      for (;;) {
        const { value, done } = await reader.read()
        if (done) break
        buffer += value.replace(/\r\n?/g, '\n')
        let end
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          onFrame(buffer.slice(0, end))
          buffer = buffer.slice(end + 2)
        }
      }
    } catch (error) {
      if (abort.signal.aborted) return
    }
    if (generation !== state.generation) return
    setConnection('error', 'disconnected · reconnecting…')
    setOnline(false)
    await new Promise((r) => setTimeout(r, Math.min(10_000, 500 * 2 ** attempt)))
  }
}

function onFrame(frame) {
  let type
  let data = ''
  for (const line of frame.split('\n')) {
    if (line.startsWith('data:')) data += (data ? '\n' : '') + line.slice(line[5] === ' ' ? 6 : 5)
    else if (line.startsWith('event:')) type = line.slice(6).trim()
  }
  if (!data) return
  let event
  try {
    event = JSON.parse(data)
  } catch {
    return
  }
  if (!event || typeof event.name !== 'string') return
  event.type ??= type
  if (!EVENT_TYPES.includes(event.type)) return
  receive(event)
}

/** A lock server started in the test's own process (real HTTP on a loopback port), for options the CLI does not expose. */
import { request, type IncomingMessage } from 'node:http'
import { Baton } from '../../src/baton.js'
import { newClientId } from '../../src/core/owner.js'
import { createPrivateMemoryDriver } from '../../src/drivers/memory/index.js'
import { createLockServer, type LockServer, type LockServerOptions } from '../../src/server/index.js'

export async function startInProcess(options: Omit<LockServerOptions, 'baton'> = {}): Promise<{ server: LockServer; base: string }> {
  const baton = new Baton(createPrivateMemoryDriver(), newClientId())
  const server = await createLockServer({ baton, ...options })
  const base = await server.listen('127.0.0.1', 0)
  return { server, base: base.replace('localhost', '127.0.0.1') }
}

/** Opens GET /v1/events with node:http, so the test decides when (and whether) to read. */
export function openEvents(base: string, headers: Record<string, string> = {}, query = ''): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}/v1/events${query}`, { headers: { accept: 'text/event-stream', ...headers } }, resolve)
    req.on('error', reject)
    req.end()
  })
}

export interface SseEvent {
  id?: string
  event?: string
  data?: any
}

/** Splits SSE text into its events (comment-only blocks left out). */
export function parseSse(text: string): SseEvent[] {
  const events: SseEvent[] = []
  for (const block of text.split('\n\n')) {
    const event: SseEvent = {}
    for (const line of block.split('\n')) {
      if (line.startsWith('id: ')) event.id = line.slice(4)
      else if (line.startsWith('event: ')) event.event = line.slice(7)
      else if (line.startsWith('data: ')) event.data = JSON.parse(line.slice(6))
    }
    if (event.event) events.push(event)
  }
  return events
}

/** Reads a response until its text satisfies `enough` (or it ends). */
export function readUntil(response: IncomingMessage, enough: (text: string) => boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = ''
    const done = () => {
      response.off('data', onData)
      response.pause()
      resolve(text)
    }
    const onData = (chunk: Buffer) => {
      text += chunk.toString('utf8')
      if (enough(text)) done()
    }
    response.on('data', onData)
    response.once('end', done)
    response.once('error', reject)
    response.resume()
  })
}

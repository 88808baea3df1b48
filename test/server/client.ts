/** Small helpers for talking to a real `baton serve` over HTTP in tests. */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { ensureCommand } from '../harness/install.js'
import { ms } from '../harness/timing.js'

export interface Answer<T = any> {
  status: number
  body: T
  headers: Headers
}

export async function call<T = any>(
  base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {},
): Promise<Answer<T>> {
  const response = await fetch(base + path, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    signal: AbortSignal.timeout(ms(30_000)),
  })
  const text = await response.text()
  let parsed: unknown = text
  try {
    parsed = JSON.parse(text)
  } catch {
    // not JSON (metrics, dashboard)
  }
  return { status: response.status, body: parsed as T, headers: response.headers }
}

/** The Authorization header for a bearer token. */
export const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

export const lockPath = (name: string, suffix = ''): string => `/v1/locks/${encodeURIComponent(name)}${suffix}`

/** Runs curl and returns its stdout; `-w '\n%{http_code}'` appends the status on the last line. */
export async function curl(args: string[]): Promise<{ status: number; body: string }> {
  await ensureCommand('curl', 'curl')
  const { stdout } = await promisify(execFile)('curl', ['-s', '-w', '\n%{http_code}', ...args], { timeout: ms(30_000) })
  const lines = stdout.split('\n')
  const status = Number(lines.pop())
  return { status, body: lines.join('\n') }
}

/** Reads server-sent events from a stream until `count` events matched or the signal aborts. */
export async function readEvents(
  base: string, query: string, headers: Record<string, string>, onOpen: () => void, count: number,
): Promise<{ event: string; data: any }[]> {
  const controller = new AbortController()
  const timer = setTimeout(() => controller.abort(), ms(20_000))
  const response = await fetch(`${base}/v1/events${query}`, { headers, signal: controller.signal })
  const events: { event: string; data: any }[] = []
  onOpen()
  const decoder = new TextDecoder()
  let buffered = ''
  try {
    for await (const chunk of response.body!) {
      buffered += decoder.decode(chunk as Uint8Array, { stream: true })
      let end: number
      while ((end = buffered.indexOf('\n\n')) >= 0) {
        const block = buffered.slice(0, end)
        buffered = buffered.slice(end + 2)
        const event = /^event: (.*)$/m.exec(block)?.[1]
        const data = /^data: (.*)$/m.exec(block)?.[1]
        if (event && data) events.push({ event, data: JSON.parse(data) })
        if (events.length >= count) {
          controller.abort()
          return events
        }
      }
    }
  } catch (error) {
    if (!controller.signal.aborted) throw error
  } finally {
    clearTimeout(timer)
  }
  return events
}

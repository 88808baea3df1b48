/**
 * The NDJSON body of a waiting acquire (one JSON value a line: "in line",
 * heartbeats, then the grant or an error), read as it arrives.
 */

/** NDJSON lines of a response body, parsed. */
export async function* readLines(response: Response): AsyncGenerator<unknown> {
  if (!response.body) return
  const decoder = new TextDecoder()
  let buffered = ''
  for await (const chunk of response.body) {
    buffered += decoder.decode(chunk as Uint8Array, { stream: true })
    let newline: number
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, newline).trim()
      buffered = buffered.slice(newline + 1)
      if (line) yield JSON.parse(line)
    }
  }
  if (buffered.trim()) yield JSON.parse(buffered)
}

/** The line after the heartbeats: the grant, an error, or undefined when the stream ended. */
export async function nextAnswer(lines: AsyncGenerator<unknown>): Promise<{ leaseId?: string } | undefined> {
  for (;;) {
    const next = await lines.next()
    if (next.done) return undefined
    const line = next.value as { state?: string; leaseId?: string }
    if (line.state === 'waiting' && line.leaseId === undefined) continue
    return line
  }
}

/** Reads to the end rather than abort, so the connection stays in the keep-alive pool. */
export async function drain(lines: AsyncGenerator<unknown>): Promise<void> {
  try {
    while (!(await lines.next()).done) {
      // nothing more is expected after the answer
    }
  } catch {
    // the connection went; nothing to keep
  }
}

/**
 * The NDJSON answer of a waiting acquire (single or multi-lock): a line when
 * in line, heartbeats while waiting, then the grant or the error. Apart from
 * the routes because both acquire routes stream the same way.
 */
import type { FastifyReply } from 'fastify'
import { toHttpError } from './http-errors.js'

export const NDJSON = 'application/x-ndjson'

/**
 * The streamed form of a waiting acquire: `{"state":"waiting"}` as soon as
 * the request is in the store's line, then one line with the grant or the
 * error. A client learns that its place is taken without a second request.
 */
export class AnswerStream {
  private started = false
  private heartbeat: NodeJS.Timeout | undefined
  constructor(private readonly reply: FastifyReply, private readonly heartbeatMs: number) {
    reply.hijack()
  }

  /** The "in line" line, then a heartbeat line while quiet, so no client or proxy body timeout ends the wait. */
  waiting(value: unknown): void {
    this.line(value)
    this.heartbeat ??= setInterval(() => this.line({ state: 'waiting' }), this.heartbeatMs)
    this.heartbeat.unref()
  }

  line(value: unknown, status = 200): void {
    const res = this.reply.raw
    if (res.destroyed) return
    if (!this.started) {
      this.started = true
      res.writeHead(status, { 'content-type': `${NDJSON}; charset=utf-8`, 'cache-control': 'no-store', 'x-accel-buffering': 'no' })
    }
    res.write(`${JSON.stringify(value)}\n`)
  }

  end(value: unknown): FastifyReply {
    clearInterval(this.heartbeat)
    this.line(value)
    this.reply.raw.end()
    return this.reply
  }

  fail(error: unknown): FastifyReply {
    clearInterval(this.heartbeat)
    const http = toHttpError(error)
    this.line({ error: { code: http.code, message: http.message } }, http.status)
    this.reply.raw.end()
    return this.reply
  }
}

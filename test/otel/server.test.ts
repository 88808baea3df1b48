/**
 * `baton serve` tracing, end to end: a real `baton serve` process (the
 * bundled command and the plain ESM one) with the standard OTEL_* variables
 * pointing at a small OTLP/HTTP receiver this test runs (JSON encoding); a
 * client request carrying a W3C traceparent. The receiver gets the server
 * span (a child of the client's span) with the lock span under it, and no
 * lock name or lease id anywhere. Without OTEL_* nothing is sent and the
 * bundled command never reads its OpenTelemetry bundle (vendor/otel.js.br,
 * watched by a preloaded file-read hook); a missing SDK with OTEL_* set stops
 * the start with the packages named.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { after, before, describe, it } from 'node:test'
import { BIN } from '../harness/baton-server.js'
import { ManagedServer } from '../harness/servers.js'
import { ms } from '../harness/timing.js'

const BUNDLED_BIN = fileURLToPath(new URL('../../cli/baton.js', import.meta.url))
const OTEL_VARIABLES = [
  'OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_TRACES_EXPORTER', 'OTEL_SDK_DISABLED',
  'OTEL_EXPORTER_OTLP_PROTOCOL', 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'OTEL_SERVICE_NAME', 'BATON_OTEL_LOCK_NAMES',
]

interface OtlpValue { stringValue?: string; intValue?: number | string; boolValue?: boolean; doubleValue?: number }
interface OtlpSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind: number
  attributes?: { key: string; value: OtlpValue }[]
  status?: { code?: number }
}
interface OtlpExport {
  resourceSpans: { resource?: { attributes?: { key: string; value: OtlpValue }[] }; scopeSpans: { spans: OtlpSpan[] }[] }[]
}

/** The OTLP/HTTP receiver: every request it got, and the JSON bodies of POST /v1/traces. */
class Receiver {
  readonly requests: string[] = []
  readonly bodies: string[] = []
  private readonly server: Server = createServer((request, response) => {
    this.requests.push(`${request.method} ${request.url} ${request.headers['content-type']}`)
    let body = ''
    request.setEncoding('utf8')
    request.on('data', (chunk: string) => (body += chunk))
    request.on('end', () => {
      if (request.method === 'POST' && request.url === '/v1/traces') this.bodies.push(body)
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve))
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`
  }
  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()))
  }
  get spans(): OtlpSpan[] {
    return this.bodies.flatMap((body) => (JSON.parse(body) as OtlpExport).resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)))
  }
  resourceAttribute(key: string): OtlpValue | undefined {
    return this.bodies.flatMap((body) => (JSON.parse(body) as OtlpExport).resourceSpans)
      .flatMap((r) => r.resource?.attributes ?? []).find((a) => a.key === key)?.value
  }
}

const attribute = (span: OtlpSpan, key: string): string | number | boolean | undefined => {
  const value = span.attributes?.find((a) => a.key === key)?.value
  if (!value) return undefined
  if (value.intValue !== undefined) return Number(value.intValue)
  return value.stringValue ?? value.boolValue ?? value.doubleValue
}

const dir = mkdtempSync(join(tmpdir(), 'baton-otel-server-'))
/** A module resolve hook for the plain ESM command (here: one that hides a package, as if not installed). */
function hookFile(label: string, body: string): string {
  const hooks = join(dir, `${label}-hooks.mjs`)
  writeFileSync(hooks, `export async function resolve(specifier, context, next) {\n${body}\n  return next(specifier, context)\n}\n`)
  const register = join(dir, `${label}-register.mjs`)
  writeFileSync(register, `import { register } from 'node:module'\nregister(${JSON.stringify(pathToFileURL(hooks).href)})\n`)
  return register
}
/** A preload for the bundled command that logs every read of its OpenTelemetry bundle. */
const otelReads = join(dir, 'otel-reads.log')
const READ_HOOK = join(dir, 'read-hook.cjs')
writeFileSync(READ_HOOK, `const fs = require('node:fs')
const read = fs.readFileSync
fs.readFileSync = function (path, ...rest) {
  if (/vendor[\\/]otel\\.js/.test(String(path))) fs.appendFileSync(${JSON.stringify(otelReads)}, String(path) + '\\n')
  return read.call(this, path, ...rest)
}
`)
const HIDE_SDK_HOOK = hookFile('hide', `  if (specifier === '@opentelemetry/sdk-trace-base') throw Object.assign(new Error("Cannot find package '" + specifier + "'"), { code: 'ERR_MODULE_NOT_FOUND' })`)

/** `env` arguments: the OTEL_* variables of this process unset, then `set`. */
const envArgs = (set: Record<string, string>) => [...OTEL_VARIABLES.flatMap((name) => ['-u', name]), ...Object.entries(set).map(([k, v]) => `${k}=${v}`)]

async function startServe(env: Record<string, string>, node: string[]): Promise<ManagedServer> {
  return ManagedServer.launch({
    label: 'baton serve (otel)',
    command: 'env',
    cwd: process.cwd(),
    args: (port) => [...envArgs(env), process.execPath, ...node, 'serve', '--port', String(port), '--no-restart-wait'],
    probe: async (port) => (await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(ms(1000)) })).ok,
  })
}

const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const CLIENT_SPAN = '00f067aa0ba902b7'
const NAME = 'orders/secret-42'

/** A client acquire (with the caller's traceparent) and release; the lease id. */
async function acquireAndRelease(base: string): Promise<string> {
  const acquired = await fetch(`${base}/v1/locks/${encodeURIComponent(NAME)}/acquire`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01` },
    body: JSON.stringify({ ttl: '30s' }),
  })
  assert.equal(acquired.status, 200)
  const { leaseId } = await acquired.json() as { leaseId: string }
  const released = await fetch(`${base}/v1/leases/${encodeURIComponent(leaseId)}`, { method: 'DELETE' })
  assert.ok(released.ok, `release: ${released.status}`)
  return leaseId
}

/** What a traced run must export: the span tree under the client's span, no name or lease id. */
function checkTrace(receiver: Receiver, leaseId: string): void {
  assert.ok(receiver.requests.every((line) => line.startsWith('POST /v1/traces application/json')), receiver.requests.join('\n'))
  const spans = receiver.spans
  const server = spans.find((s) => s.name === 'POST /v1/locks/:name/acquire')
  assert.ok(server, `no server span among ${spans.map((s) => s.name).join(', ')}`)
  assert.equal(server.kind, 2) // SPAN_KIND_SERVER
  assert.equal(server.traceId, CLIENT_TRACE)
  assert.equal(server.parentSpanId, CLIENT_SPAN)
  assert.equal(attribute(server, 'http.request.method'), 'POST')
  assert.equal(attribute(server, 'http.route'), '/v1/locks/:name/acquire')
  assert.equal(attribute(server, 'url.path'), '/v1/locks/{name}/acquire')
  assert.equal(attribute(server, 'http.response.status_code'), 200)

  const lock = spans.find((s) => s.name === 'baton.lock.acquire')
  assert.ok(lock, 'no lock span')
  assert.equal(lock.traceId, CLIENT_TRACE)
  assert.equal(lock.parentSpanId, server.spanId)
  assert.equal(attribute(lock, 'baton.lock.outcome'), 'granted')
  assert.equal(attribute(lock, 'baton.lock.attempts'), 1)
  assert.equal(attribute(lock, 'baton.lock.name'), undefined)

  const release = spans.find((s) => s.name === 'DELETE /v1/leases/:leaseId')
  assert.ok(release, 'no release span')
  assert.equal(attribute(release, 'url.path'), '/v1/leases/{leaseId}')
  assert.equal(receiver.resourceAttribute('service.name')?.stringValue, 'locks-test')
  const exported = receiver.bodies.join('\n')
  assert.ok(!exported.includes('secret-42'), 'the lock name was exported')
  assert.ok(!exported.includes(leaseId), 'a lease id was exported')
}

describe('baton serve: request traces over OTLP/HTTP', () => {
  const receiver = new Receiver()
  let endpoint = ''
  before(async () => {
    endpoint = await receiver.start()
  })
  after(async () => {
    await receiver.close()
  })

  for (const [label, node] of [['the bundled command', ['--require', READ_HOOK, BUNDLED_BIN]], ['the ESM command', [BIN]]] as const) {
    it(`${label}: the server span is the client span's child, the lock span under it`, async () => {
      receiver.requests.length = 0
      receiver.bodies.length = 0
      writeFileSync(otelReads, '')
      const serve = await startServe({
        OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_SERVICE_NAME: 'locks-test', OTEL_BSP_SCHEDULE_DELAY: '50',
      }, [...node])
      let leaseId: string
      try {
        assert.match(serve.output(), /traces over OTLP\/HTTP to http:\/\/127\.0\.0\.1:\d+\/v1\/traces/)
        leaseId = await acquireAndRelease(`http://127.0.0.1:${serve.port}`)
      } finally {
        await serve.stop() // a graceful stop exports what is left
      }
      checkTrace(receiver, leaseId)
      // The read hook sees the SDK load here, so its silence in the untraced run means something.
      if (node.includes(READ_HOOK)) assert.match(readFileSync(otelReads, 'utf8'), /otel\.js\.br/)
    })
  }

  it('without OTEL_* (or with OTEL_TRACES_EXPORTER=none) nothing is sent and the SDK is not loaded', async () => {
    receiver.requests.length = 0
    writeFileSync(otelReads, '')
    for (const env of [{}, { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_TRACES_EXPORTER: 'none' }] as Record<string, string>[]) {
      const serve = await startServe(env, ['--require', READ_HOOK, BUNDLED_BIN])
      try {
        await acquireAndRelease(`http://127.0.0.1:${serve.port}`)
      } finally {
        await serve.stop()
      }
      assert.doesNotMatch(serve.output(), /traces over OTLP/)
    }
    assert.deepEqual(receiver.requests, [])
    assert.equal(readFileSync(otelReads, 'utf8'), '')
  })

  it('OTEL_* set but the SDK missing: the start fails, naming the packages', async () => {
    const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve) => {
      execFile('env', [...envArgs({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint }), process.execPath, '--import', HIDE_SDK_HOOK, BIN, 'serve', '--port', '0', '--no-restart-wait'],
        { timeout: ms(20_000) }, (error, stdout, stderr) => resolve({ code: error ? (error as { code?: number }).code ?? null : 0, output: stdout + stderr }))
    })
    assert.notEqual(code, 0, output)
    assert.match(output, /@opentelemetry\/sdk-trace-base/)
    assert.match(output, /@opentelemetry\/exporter-trace-otlp-http/)
    assert.doesNotMatch(output, /listening on/)
  })
})

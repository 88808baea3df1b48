/**
 * `baton serve` over TLS (issue 27, item 7), with a private CA made here with
 * openssl: the https:// store against it, client certificates required with
 * --tls-ca, certificates rotated without a restart (SIGHUP, and a change of
 * the files), and the refusal of plain HTTP with tokens off loopback.
 */
import assert from 'node:assert/strict'
import { copyFileSync } from 'node:fs'
import { after, before, describe, it } from 'node:test'
import { httpsGet, startBatonServer, tokensFile, type BatonServer, type TlsClient } from '../harness/baton-server.js'
import { issueCertificate, makeCertificates, type TestCertificates } from '../harness/tls.js'
import { ms } from '../harness/timing.js'
import { baton } from '../cli/baton-cli.js'
import { startInProcess } from './in-process.js'
import { connect, isBatonError } from '../../src/index.js'

const TOKEN = 'tls-test-token-aaaaaaaaaaaaaaaa'

let certificates: TestCertificates
let serverFiles: { cert: string; key: string }
let client: TlsClient & { cert: string; key: string }
let server: BatonServer
let seq = 0
const fresh = (label: string) => `tls/${label}/${++seq}/${Math.random().toString(36).slice(2, 8)}`
const sleep = (msToWait: number) => new Promise((r) => setTimeout(r, msToWait))

/** The https:// store URL of the server, with `params` (a CA, a client certificate). */
const storeUrl = (params: Record<string, string>) => `https://:${TOKEN}@127.0.0.1:${server.port}?${new URLSearchParams(params)}`

async function eventually<T>(what: string, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms(20_000)
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(ms(100))
  }
}

/** The fingerprint of the certificate a new connection to the server is shown. */
async function servedFingerprint(): Promise<string> {
  const answer = await httpsGet(`${server.base}/healthz`, client)
  assert.equal(answer.status, 200)
  return answer.peer.fingerprint256
}

before(async () => {
  certificates = await makeCertificates()
  // The server's files live under names of their own, so the test can rotate them in place.
  serverFiles = await issueCertificate(certificates, 'served')
  client = { ca: certificates.ca, ...(await issueCertificate(certificates, 'client', 'client')) }
  server = await startBatonServer(
    ['--tokens', tokensFile([{ token: TOKEN, rights: ['admin'] }]), '--tls-cert', serverFiles.cert, '--tls-key', serverFiles.key, '--tls-ca', certificates.ca],
    { tls: client },
  )
})
after(() => server?.stop())

describe('baton serve --tls-cert --tls-key --tls-ca', () => {
  it('the https:// store acquires, waits, hands over and releases through it', async () => {
    const url = storeUrl({ ca: certificates.ca, cert: client.cert, key: client.key })
    const [first, second] = await Promise.all([connect(url), connect(url)])
    try {
      const name = fresh('store')
      const held = await first.mutex(name, { ttl: ms(1500) }).acquire({ wait: ms(10_000), autoExtend: true })
      const waiting = second.mutex(name, { ttl: ms(5000) }).acquire({ wait: ms(20_000) })
      await sleep(ms(3000)) // two ttls: the holder's renewals go over TLS too
      assert.equal(held.signal.aborted, false, String(held.signal.reason))
      const view = await second.inspect(name)
      assert.equal(view?.holders.length, 1)
      await held.release()
      const next = await waiting
      assert.ok(next.token > held.token)
      await next.release()
    } finally {
      await Promise.all([first.close(), second.close()])
    }
  })

  it('a client without a certificate, or with one of another CA, is refused in the handshake', async () => {
    const refused = async (url: string) => {
      const error = await connect(url, { connectTimeout: ms(5000) }).then(async (c) => {
        await c.close()
        return undefined
      }, (e: unknown) => e)
      assert.ok(isBatonError(error) && error.code === 'BACKEND_UNAVAILABLE', `not refused: ${String(error)}`)
    }
    await refused(storeUrl({ ca: certificates.ca }))
    const stranger = await makeCertificates()
    const foreign = await issueCertificate(stranger, 'client', 'client')
    await refused(storeUrl({ ca: certificates.ca, cert: foreign.cert, key: foreign.key }))
    await assert.rejects(httpsGet(`${server.base}/healthz`, { ca: certificates.ca }))
    // Plain HTTP gets no answer of the API either.
    await assert.rejects(fetch(`http://127.0.0.1:${server.port}/healthz`, { signal: AbortSignal.timeout(ms(5000)) }).then((r) => r.text()))
  })

  it('certificates rotate without a restart: on SIGHUP, and when the files change', async () => {
    const url = storeUrl({ ca: certificates.ca, cert: client.cert, key: client.key })
    const store = await connect(url)
    try {
      const pid = server.pid
      const before = await servedFingerprint()

      // Rotation 1: new files in place, then SIGHUP.
      const beforeSerial = (await httpsGet(`${server.base}/healthz`, client)).peer.serialNumber
      await issueCertificate(certificates, 'served')
      process.kill(pid, 'SIGHUP')
      const second = await eventually('the certificate of SIGHUP to be served', async () => {
        const now = await servedFingerprint()
        return now !== before ? now : undefined
      })
      assert.match(server.output(), /SIGHUP: reloaded the TLS certificate/)
      assert.notEqual((await httpsGet(`${server.base}/healthz`, client)).peer.serialNumber, beforeSerial)
      const lease = await store.mutex(fresh('rotated'), { ttl: ms(5000) }).acquire({ wait: ms(10_000) })
      await lease.release()

      // Rotation 2: only a change of the files (a copy written over them), no signal.
      const staged = await issueCertificate(certificates, 'staged')
      copyFileSync(staged.key, serverFiles.key)
      copyFileSync(staged.cert, serverFiles.cert)
      const third = await eventually('the changed certificate files to be served', async () => {
        const now = await servedFingerprint()
        return now !== second ? now : undefined
      })
      assert.notEqual(third, before)
      assert.match(server.output(), /a certificate file changed: reloaded the TLS certificate/)
      assert.equal(server.pid, pid, 'the server was not restarted')
      const again = await store.mutex(fresh('rotated'), { ttl: ms(5000) }).acquire({ wait: ms(10_000) })
      await again.release()
    } finally {
      await store.close()
    }
  })
})

describe('TLS without client certificates', () => {
  it('the https:// store with only ?ca= works against a server with --tls-cert and --tls-key', async () => {
    const { server: plain, base } = await startInProcess({ tls: serverFiles, log: () => {} })
    try {
      assert.match(base, /^https:\/\/127\.0\.0\.1:\d+$/)
      const store = await connect(`${base}?ca=${encodeURIComponent(certificates.ca)}`)
      const lease = await store.mutex(fresh('plain'), { ttl: ms(5000) }).acquire({ wait: ms(10_000) })
      assert.equal((await store.inspect(lease.name))?.holders.length, 1)
      await lease.release()
      await store.close()
      // Without the private CA the server's certificate is not trusted.
      await assert.rejects(connect(base, { connectTimeout: ms(5000) }), (error: unknown) => isBatonError(error) && error.code === 'BACKEND_UNAVAILABLE')
    } finally {
      await plain.close()
    }
  })
})

describe('plain HTTP with tokens off loopback, and TLS settings', () => {
  it('--host other than loopback with --tokens and no TLS is refused unless --insecure', async () => {
    const tokens = tokensFile([{ token: TOKEN }])
    const refused = await baton(['serve', '--host', '0.0.0.0', '--port', '0', '--tokens', tokens], { BATON_URL: undefined })
    assert.equal(refused.code, 2, refused.stderr)
    assert.match(refused.stderr, /--host 0\.0\.0\.0 with --tokens needs --tls-cert and --tls-key.*--insecure/)
    for (const [args, message] of [
      [['--tls-cert', serverFiles.cert], /--tls-cert and --tls-key go together/],
      [['--tls-ca', certificates.ca], /--tls-ca \(client certificates\) needs --tls-cert and --tls-key/],
      [['--tls-cert', serverFiles.cert, '--tls-key', client.key], /do not make a TLS context/],
      [['--tls-cert', `${serverFiles.cert}.missing`, '--tls-key', serverFiles.key], /--tls-cert \S+\.missing can not be read/],
    ] as const) {
      const result = await baton(['serve', '--port', '0', ...args], { BATON_URL: undefined })
      assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`)
      assert.match(result.stderr, message)
    }
  })

  it('the TLS parameters of an https:// store URL are checked', async () => {
    const cases: [Record<string, string>, RegExp, string?][] = [
      [{ ca: certificates.ca }, /"ca", "cert" and "key" are TLS settings, for an https:\/\/ URL/, 'http'],
      [{ ca: certificates.ca, cert: client.cert }, /"cert" and "key" go together/],
      [{ ca: `${certificates.ca}.missing` }, /"ca" in \S+ names a file that can not be read/],
      [{ ca: certificates.ca, cert: client.cert, key: serverFiles.key }, /do not make a TLS context/],
      [{ cacert: certificates.ca }, /unknown parameter "cacert"/],
    ]
    for (const [params, message, scheme] of cases) {
      const url = storeUrl(params).replace(/^https/, scheme ?? 'https')
      await assert.rejects(connect(url, { connectTimeout: ms(5000) }), (error: unknown) => {
        assert.ok(isBatonError(error) && error.code === 'INVALID_ARGUMENT', String(error))
        assert.match(error.message, message)
        assert.ok(!error.message.includes(TOKEN), 'never the token')
        return true
      })
    }
  })
})

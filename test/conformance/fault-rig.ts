/**
 * What every fault file of the conformance suite sets up the same way: one
 * TCP proxy per server of the store's URL (made before the file's tests,
 * healed after each, closed at the end), clients whose every connection goes
 * through them, and the rule for whether a fault case runs on this store
 * (skipped with its reason, or run with its declared exception printed).
 * Called inside a `describe`, so the hooks belong to it.
 */
import assert from 'node:assert/strict'
import { after, afterEach, before, type TestContext } from 'node:test'
import { connect, type Baton } from '../../src/index.js'
import { startProxy, type Proxy } from '../harness/proxy.js'
import { ms } from '../harness/timing.js'
import type { FaultCase, FaultSupport, SuiteContext } from './context.js'

export interface FaultRig {
  /** The proxies, one per server of the URL, in the order of `FaultSupport.ports`. */
  readonly proxies: readonly Proxy[]
  readonly support: FaultSupport | undefined
  /** A client whose every connection goes through the proxies; closed after the test. */
  proxiedClient(): Promise<Baton>
  /**
   * Skips (saying why) when the store has no network or can not be proxied,
   * or `fault` is a declared known defect; else the declared exception for
   * `fault`, printed, or undefined.
   */
  applies(t: TestContext, fault: FaultCase, proxied?: boolean): { run: boolean; exception?: string }
}

export function faultRig(ctx: SuiteContext): FaultRig {
  let proxies: Proxy[] = []
  let proxiedUrl = ''
  const clients: Baton[] = []
  const support = (): FaultSupport | undefined => ctx.harness.faults

  before(async () => {
    const given = support()
    if (!given || given.exceptions?.proxy) return
    proxies = await Promise.all(given.ports.map((port) => startProxy(port)))
    proxiedUrl = given.ports.reduce(
      (url, port, i) => url.replaceAll(`127.0.0.1:${port}`, `127.0.0.1:${proxies[i]!.port}`),
      ctx.harness.url,
    )
    assert.notEqual(proxiedUrl, ctx.harness.url, 'the store URL names its servers as 127.0.0.1:<port>')
  })
  afterEach(async () => {
    for (const proxy of proxies) {
      proxy.onReply(undefined)
      proxy.resume()
    }
    await Promise.all(clients.splice(0).map((c) => c.close().catch(() => {})))
  })
  after(() => Promise.all(proxies.map((p) => p.close())))

  return {
    get proxies() { return proxies },
    get support() { return support() },
    async proxiedClient() {
      const client = await connect(proxiedUrl, { commandTimeout: ms(1000) })
      clients.push(client)
      return client
    },
    applies(t, fault, proxied = true) {
      const given = support()
      if (!given) {
        t.skip(`the harness of ${ctx.harness.url.split(':')[0]}:// gives no servers to fault (memory:// has no network; ` +
          'the TLS and Sentinel variants run the drivers that the fault layer runs on redis:// and postgres://)')
        return { run: false }
      }
      if (proxied && given.exceptions?.proxy) {
        t.skip(`declared: ${given.exceptions.proxy}`)
        return { run: false }
      }
      const defect = given.knownDefects?.[fault]
      if (defect) {
        t.skip(`KNOWN DEFECT, to be fixed: ${defect}`)
        return { run: false }
      }
      const exception = given.exceptions?.[fault]
      if (exception) t.diagnostic(`declared exception (${fault}): ${exception}`)
      return exception ? { run: true, exception } : { run: true }
    },
  }
}

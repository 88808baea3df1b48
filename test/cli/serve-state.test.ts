/**
 * `baton serve` on its embedded store with no flags (what `npm start` runs):
 * it keeps its state in a per-port folder of the user's state directory, so a
 * first start grants at once, and a restart after a kill -9 waits only for the
 * lease of the previous run that can still be live, then grants.
 */
import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { defaultStateDir } from '../../src/cli/commands/serve.js'
import { freePort } from '../harness/ports.js'
import { ms } from '../harness/timing.js'
import { startBaton } from './baton-cli.js'

async function acquire(port: number, name: string, ttl: string): Promise<Response> {
  return fetch(`http://127.0.0.1:${port}/v1/locks/${name}/acquire`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ttl }),
  })
}

describe('baton serve: default state directory', () => {
  it('is per port under BATON_STATE_DIR, XDG_STATE_HOME or ~/.local/state; none for port 0', () => {
    assert.equal(defaultStateDir(7420, { BATON_STATE_DIR: '/s' }), '/s/serve-7420')
    assert.equal(defaultStateDir(7420, { XDG_STATE_HOME: '/x' }), '/x/baton/serve-7420')
    assert.match(defaultStateDir(7420, {})!, /\.local\/state\/baton\/serve-7420$/)
    assert.equal(defaultStateDir(0, { BATON_STATE_DIR: '/s' }), undefined)
  })

  it('a first start grants at once; after kill -9 a restart waits out the live lease, then grants', async (t) => {
    // Long enough that the restart normally comes while the lease is live;
    // on a machine so busy that it does not, granting is right, and said so.
    const ttlMs = ms(6000)
    const ttl = `${ttlMs}ms`
    const state = mkdtempSync(join(tmpdir(), 'baton-state-'))
    const port = await freePort()
    const env = { BATON_STATE_DIR: state, BATON_URL: undefined, BATON_DATA_DIR: undefined }
    const first = startBaton(['serve', '--port', String(port)], env)
    await first.waitForOutput('listening on')
    const grantedBefore = Date.now()
    const granted = await acquire(port, 'first', ttl)
    assert.equal(granted.status, 200, await granted.clone().text())
    first.process.kill('SIGKILL')
    await first.finished
    const second = startBaton(['serve', '--port', String(port)], env)
    try {
      await second.waitForOutput('listening on')
      const early = await acquire(port, 'first', ttl)
      if (early.status === 200 && Date.now() - grantedBefore > ttlMs) {
        t.diagnostic(`the restart took longer than the ${ttlMs} ms lease: nothing left to wait out`)
        return
      }
      assert.equal(early.status, 503, 'the previous run\'s lease may still be live')
      assert.ok(Number(early.headers.get('retry-after')) <= Math.ceil(ttlMs / 1000) + 1, `Retry-After ${early.headers.get('retry-after')} covers only that lease`)
      const deadline = Date.now() + ms(30_000)
      let status = 0
      while (Date.now() < deadline && (status = (await acquire(port, 'first', ttl)).status) !== 200) await new Promise((r) => setTimeout(r, 250))
      assert.equal(status, 200, 'grants resume once that lease has surely ended')
    } finally {
      second.process.kill('SIGTERM')
      await second.finished
    }
  })
})

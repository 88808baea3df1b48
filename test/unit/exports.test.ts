/**
 * What the documentation tells a user to read has a type they can name:
 * `error.holder` (LOCK_TIMEOUT) and a quorum store's `LockView.nodes`.
 * A missing export fails the build of this file (tsc), so the test fails.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { BatonError, connect, type HolderInfo, type LockView, type NodeView } from '../../src/index.js'

const describeHolder = (holder: HolderInfo | undefined): string => (holder ? `${holder.owner} (token ${holder.token})` : 'unknown')
const downNodes = (view: LockView): NodeView[] => (view.nodes ?? []).filter((node) => node.state === 'down')

describe('public exports', () => {
  it('name the types of error.holder and LockView.nodes', async () => {
    const baton = await connect('memory://exports-test')
    try {
      const lease = await baton.mutex('exports/a').acquire()
      const error = await baton.mutex('exports/a').acquire({ wait: 0 }).then(() => undefined, (e: unknown) => e)
      assert.ok(error instanceof BatonError && error.code === 'LOCK_TIMEOUT', String(error))
      assert.match(describeHolder(error.holder), /token/)
      assert.deepEqual(downNodes((await baton.inspect('exports/a'))!), [])
      await lease.release()
    } finally {
      await baton.close()
    }
  })
})

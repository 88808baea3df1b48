/**
 * ZooKeeper errors as the driver meets them: a request's failure arrives as a
 * BatonError (guarded(): BACKEND_UNAVAILABLE or QUORUM_NOT_REACHED) whose
 * cause is a copy of the client's Exception, not the Exception. A waiter's
 * retry that met CONNECTION_LOSS (a process resumed from SIGSTOP as its
 * session ends) must still be told "try again", as Curator does: the check
 * read only a raw Exception, so the wait failed (a fresh-clone run, the
 * conformance case "a waiter stopped (SIGSTOP) while the lock is handed to it").
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import zookeeper from 'node-zookeeper-client'
import { diagnoseFailure } from '../../src/drivers/sequenced/quorum.js'
import { errorCode, sessionInterrupted, zkFailure } from '../../src/drivers/zookeeper/session.js'

/** An Exception as the client library makes one (its `create` is not in the published types). */
const exception = (code: number): Error => (zookeeper.Exception as unknown as { create(code: number): Error }).create(code)

describe('ZooKeeper errors', () => {
  it('a dropped connection or an ended session is seen through the BatonError that carries it', async () => {
    for (const code of [zookeeper.Exception.CONNECTION_LOSS, zookeeper.Exception.SESSION_EXPIRED]) {
      const raw = exception(code)
      assert.equal(sessionInterrupted(raw), true)
      assert.equal(sessionInterrupted(zkFailure('zk://127.0.0.1:2181', raw)), true, 'through zkFailure')
      const diagnosed = await diagnoseFailure('ZooKeeper ensemble', raw, async () => [{ node: '127.0.0.1:2181', state: 'serving', detail: 'up, standalone' }])
      assert.equal(sessionInterrupted(diagnosed), true, 'through diagnoseFailure (guarded requests)')
      assert.equal(errorCode(diagnosed.cause), code)
    }
  })

  it('other failures are not an interrupted session', () => {
    assert.equal(sessionInterrupted(exception(zookeeper.Exception.NO_NODE)), false)
    assert.equal(sessionInterrupted(new Error('no answer within 5000 ms')), false)
    assert.equal(sessionInterrupted(undefined), false)
  })
})

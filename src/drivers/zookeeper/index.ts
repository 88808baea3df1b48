import type { Capabilities, DriverFactory, DriverOptions } from '../../core/driver.js'
import { SequencedDriver } from '../sequenced/facade.js'
import type { StoreUrl } from '../../core/url.js'
import { ZkElections } from './elections.js'
import { ZkHolds } from './holds.js'
import { ZkInspector } from './inspect.js'
import { ROOT, ZkLines } from './paths.js'
import { CreateMode, ensureChroot, errorCode, Exception, zkDiagnosis, zkTarget, type ZkTarget } from './session.js'
import { ZkSessions } from './sessions.js'

const CAPABILITIES: Capabilities = {
  // Lock delay: an expired hold's node stays for the delay; a crashed client's session outlives its holds by it.
  fair: true, rwlock: true, semaphore: true, lockDelay: true, handoff: true, durableTokens: true,
}

/**
 * ZooKeeper. Every hold or waiter is one EPHEMERAL_SEQUENTIAL node
 * `/baton/<name, escaped>/<spec>|<owner>-<sequence>` of one of this client's
 * sessions; the line is ordered by the sequence suffix and each waiter sets an
 * exists-watch on the nodes it waits for only (see sequenced/line.ts), so a
 * release wakes one client, whatever the length of the line. The node's
 * creation zxid is the fencing token (sequence numbers restart when the parent
 * is removed; zxids never go back).
 */
export class ZkDriver extends SequencedDriver {
  readonly store = 'zookeeper'
  readonly capabilities = CAPABILITIES
  private readonly sessions: ZkSessions
  private readonly lines = new ZkLines()
  protected readonly holds: ZkHolds
  protected readonly elections: ZkElections
  protected readonly inspector: ZkInspector
  private closed = false

  constructor(target: ZkTarget, clientId: string) {
    super()
    this.sessions = new ZkSessions(target, {
      expired: (session) => {
        this.holds.expired(session)
        // Its watches went with it: election observers look again, on a new session.
        this.elections.sessionChanged(session)
      },
      inDoubt: (session) => this.holds.inDoubt(session),
      reconnected: (session) => {
        // Election observers look again (a notice may have been lost) and set their watches anew.
        this.elections.sessionChanged(session)
        this.holds.reconnected(session)
      },
    })
    this.holds = new ZkHolds(target, clientId, this.sessions, this.lines)
    this.elections = new ZkElections(target, this.sessions, this.lines, this.holds.slots)
    this.inspector = new ZkInspector(target, this.sessions, this.lines, this.holds.slots, (slot) => this.holds.ttlLeft(slot))
  }

  forceRelease(name: string): Promise<boolean> {
    return this.inspector.forceRelease(name)
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.sessions.closing()
    this.elections.close()
    await this.holds.close()
    this.sessions.closeAll()
  }
}

export const createZkDriver: DriverFactory = async (url: StoreUrl, options: DriverOptions) => {
  const target = zkTarget(url, options)
  const driver = new ZkDriver(target, options.clientId)
  const session = await (driver as unknown as { sessions: ZkSessions }).sessions.admin()
  // The root exists (or can be made) and the URL's identity may use it.
  try {
    await session.create(ROOT, undefined, CreateMode.PERSISTENT).catch(async (error: unknown) => {
      if (errorCode(error) !== Exception.NO_NODE || target.chroot === '') throw error
      await ensureChroot(target)
      await session.create(ROOT, undefined, CreateMode.PERSISTENT)
    }).catch((error: unknown) => {
      if (errorCode(error) !== Exception.NODE_EXISTS) throw error
    })
  } catch (error) {
    await driver.close()
    throw await zkDiagnosis(target, error)
  }
  return driver
}

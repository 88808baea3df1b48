import type { Etcd3, Watcher } from 'etcd3'
import type { Capabilities, DriverFactory, DriverOptions } from '../../core/driver.js'
import type { StoreUrl } from '../../core/url.js'
import { etcdDiagnosis, etcdTarget, openEtcd, WatchReconnects, type EtcdTarget } from './connection.js'
import { EtcdElections } from './elections.js'
import { EtcdHolds } from './holds.js'
import { EtcdInspector } from './inspect.js'
import { idleKey, Lines } from './keys.js'
import { SequencedDriver } from '../sequenced/facade.js'

const CAPABILITIES: Capabilities = {
  // Lock delay: an expired hold's key moves to a lease of the delay; a crashed client's lease outlives its holds by it.
  fair: true, rwlock: true, semaphore: true, lockDelay: true, handoff: true, durableTokens: true,
}

/**
 * etcd v3. Every hold or waiter is one key `<name>/<lease id hex>.<hold id>`
 * attached to a lease of this client, ordered by create revision; the key with
 * the lowest create revision under `<name>/` holds a mutex, exactly as in
 * etcd's concurrency.Mutex (`etcdctl lock <name>`), so both exclude each other.
 * The create revision is the fencing token. A release deletes the key, which by
 * itself makes the next entry the holder; its client learns it from the watch.
 */
export class EtcdDriver extends SequencedDriver {
  readonly store = 'etcd'
  readonly capabilities = CAPABILITIES
  private readonly lines: Lines
  protected readonly holds: EtcdHolds
  protected readonly elections: EtcdElections
  protected readonly inspector: EtcdInspector
  private closed = false

  constructor(
    private readonly client: Etcd3,
    target: EtcdTarget,
    clientId: string,
    idleWatcher: Watcher,
    private readonly reconnects: WatchReconnects,
  ) {
    super()
    this.lines = new Lines(client, target)
    this.holds = new EtcdHolds(client, target, clientId, this.lines, idleWatcher)
    this.elections = new EtcdElections(client, target, this.lines, this.holds.slots, this.holds.watches)
    this.inspector = new EtcdInspector(client, target, this.lines, this.holds.slots)
  }

  async forceRelease(name: string): Promise<boolean> {
    const read = await this.lines.read(name)
    if (read.line.length === 0) return false
    // All at one revision: nobody is granted by it; holders' clients see `lost`, waiters' `retry`.
    await this.holds.deleteKeys(read.line.map((e) => e.id))
    return true
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.holds.watches.closing()
    await this.holds.deleteKeys(this.holds.slots.clear().map((s) => s.id)).catch(() => {})
    // Holds stay until their lease runs out, like any client that goes away.
    this.holds.leases.stopAll()
    this.elections.close()
    await this.holds.watches.cancelAll()
    this.reconnects.close()
    this.client.close()
    this.holds.watches.detachAll()
  }
}

export const createEtcdDriver: DriverFactory = async (url: StoreUrl, options: DriverOptions) => {
  const target = etcdTarget(url, options)
  const reconnects = new WatchReconnects()
  const client = await openEtcd(target, options.connectTimeoutMs, reconnects)
  try {
    // etcd3 tears its watch stream down with the last watcher: this one keeps it up.
    const idle = await client.watch().key(idleKey(target)).create()
    return new EtcdDriver(client, target, options.clientId, idle, reconnects)
  } catch (cause) {
    reconnects.close()
    client.close()
    throw await etcdDiagnosis(target, cause)
  }
}

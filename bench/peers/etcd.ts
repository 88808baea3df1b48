/**
 * etcd peers for the consensus-store figures: the `etcd3` package's own
 * `Lock` (a try-lock: one lease per attempt, put-if-absent) behind a retry
 * loop, and etcd's server-side Lock RPC (v3lock, the service behind
 * `etcdctl lock`), called over etcd3's gRPC dependency with one lease per
 * concurrent holder.
 */
import { fileURLToPath } from 'node:url'
import * as grpc from '@grpc/grpc-js'
import * as protoLoader from '@grpc/proto-loader'
import { Etcd3, EtcdLockFailedError, type Lease } from 'etcd3'
import type { Contender, PeerDef, PeerOptions } from './types.js'

function endpoints(url: string): string[] {
  return url.replace(/^etcd:\/\//, '').split(',').map((h) => `http://${h}`)
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** `etcd3`'s Lock: a try-lock; waiting is a retry loop (1 ms when 'fast', 50 ms by default). */
export const etcd3Lock: PeerDef = {
  id: 'etcd3-lock',
  store: 'etcd',
  label: (profile) => `etcd3 Lock + retry ${profile === 'fast' ? '1' : '50'} ms`,
  async create(options: PeerOptions): Promise<Contender> {
    const client = new Etcd3({ hosts: endpoints(options.url) })
    const retryMs = options.profile === 'fast' ? 1 : 50
    const seconds = Math.max(1, Math.ceil(options.ttlMs / 1000))
    let failures = 0
    const attempt = async (key: string) => {
      const lock = client.lock(key).ttl(seconds)
      try {
        await lock.acquire()
        return () => lock.release()
      } catch (error) {
        if (!(error instanceof EtcdLockFailedError)) throw error
        failures++
        return null
      }
    }
    return {
      label: this.label(options.profile),
      async acquire(key) {
        const deadline = Date.now() + options.waitMs
        for (;;) {
          const release = await attempt(key)
          if (release) return release
          if (Date.now() > deadline) throw new Error(`etcd3 Lock: not acquired within ${options.waitMs} ms`)
          await sleep(retryMs)
        }
      },
      tryAcquire: attempt,
      counters: () => ({ 'failed attempts': failures }),
      async close() {
        client.close()
      },
    }
  },
}

interface LockService extends grpc.Client {
  Lock(request: { name: Buffer; lease: string }, options: grpc.CallOptions, callback: (error: grpc.ServiceError | null, reply: { key: Buffer }) => void): void
  Unlock(request: { key: Buffer }, callback: (error: grpc.ServiceError | null) => void): void
}

let lockServiceType: grpc.ServiceClientConstructor | undefined
function lockService(): grpc.ServiceClientConstructor {
  if (!lockServiceType) {
    const proto = fileURLToPath(new URL('../../../bench/peers/v3lock.proto', import.meta.url))
    const definition = protoLoader.loadSync(proto, { longs: String, defaults: true })
    const v3lockpb = grpc.loadPackageDefinition(definition).v3lockpb as { Lock: grpc.ServiceClientConstructor }
    lockServiceType = v3lockpb.Lock
  }
  return lockServiceType
}

/** etcd's Lock RPC: the server waits for the lock (etcd's own concurrency.Mutex recipe), so no retry loop. */
export const etcdServerLock: PeerDef = {
  id: 'etcd-v3lock',
  store: 'etcd',
  label: () => 'etcd server Lock RPC (v3lock)',
  async create(options: PeerOptions): Promise<Contender> {
    const hosts = endpoints(options.url)
    const client = new Etcd3({ hosts })
    const Service = lockService()
    const service = new Service(hosts[0]!.replace(/^http:\/\//, ''), grpc.credentials.createInsecure()) as unknown as LockService
    // The mutex key is <name>/<lease>: holders of one process need a lease each.
    const idle: Lease[] = []
    const seconds = Math.max(2, Math.ceil(options.ttlMs / 1000))
    const leaseFor = async (): Promise<Lease> => {
      const lease = idle.pop() ?? client.lease(seconds)
      await lease.grant()
      return lease
    }
    return {
      label: 'etcd server Lock RPC (v3lock)',
      async acquire(key) {
        const lease = await leaseFor()
        const id = await lease.grant()
        const reply = await new Promise<{ key: Buffer }>((resolve, reject) => {
          service.Lock({ name: Buffer.from(key), lease: id }, { deadline: Date.now() + options.waitMs }, (error, r) => (error ? reject(error) : resolve(r)))
        })
        return async () => {
          await new Promise<void>((resolve, reject) => service.Unlock({ key: reply.key }, (error) => (error ? reject(error) : resolve())))
          idle.push(lease)
        }
      },
      async close() {
        service.close()
        await Promise.allSettled(idle.map((l) => l.revoke()))
        client.close()
      },
    }
  },
}

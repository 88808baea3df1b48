/**
 * A replicated Redis for the replica-acknowledgement proof: 1 master, 2
 * replicas and 3 Sentinels (quorum 2), each replica's replication link
 * through a proxy of its own (test/harness/proxy.ts), so a test can hold the
 * master's writes back from the replicas and then kill the master: what a
 * replica never received is what a failover loses. Separate from servers.ts
 * because it composes servers and proxies for this one kind of test.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { startProxy, type Proxy } from './proxy.js'
import { makeTempDir, ManagedServer, redisCommand, startRedis, type Probe, type RedisServer, type ServerProcess } from './servers.js'
import { ms } from './timing.js'

const HOST = '127.0.0.1'
const MASTER_NAME = 'mymaster'

export interface ReplicatedRedis {
  readonly url: string
  readonly master: RedisServer
  readonly replicas: readonly RedisServer[]
  /** One per replica: its replication link to the master. */
  readonly links: readonly Proxy[]
  readonly sentinels: readonly ServerProcess[]
  /** Holds back (pause) or lets go (resume) every replication link. */
  holdReplication(hold: boolean): void
  /** SIGKILL the master and cut the links, dropping what they held; resolves once Sentinel promoted a replica. */
  failOver(): Promise<RedisServer>
  stop(): Promise<void>
}

async function until(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (await check().catch(() => false)) return
    if (Date.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

const field = async (port: number, section: string, name: string): Promise<string | undefined> => {
  const reply = await redisCommand(port, ['INFO', section])
  return typeof reply === 'string' ? new RegExp(`^${name}:(.*)$`, 'm').exec(reply)?.[1]?.trim() : undefined
}

/**
 * `failoverTimeoutMs`: the Sentinels' failover-timeout. A Sentinel also
 * "fixes" a replica that reports another master than the one it monitors
 * once this long has passed (+fix-slave-config), and these replicas report
 * their link's proxy: from then on they replicate from the master directly
 * and holdReplication() holds nothing. A set-up that never fails over gives
 * a timeout longer than its tests; one that does keeps it short, since a
 * failover attempt that fails is tried again only after twice this.
 */
export async function startReplicatedRedis({ failoverTimeoutMs = 5000 }: { failoverTimeoutMs?: number } = {}): Promise<ReplicatedRedis> {
  const started: ServerProcess[] = []
  const links: Proxy[] = []
  const stop = async (): Promise<void> => {
    await Promise.allSettled([...started.map((s) => s.kill()), ...links.map((l) => l.close())])
  }
  try {
    const master = await startRedis()
    started.push(master)
    const replicas: RedisServer[] = []
    for (let i = 0; i < 2; i++) {
      const link = await startProxy(master.port)
      links.push(link)
      const replica = await startRedis({ args: ['--replicaof', HOST, String(link.port)] })
      started.push(replica)
      replicas.push(replica)
    }
    for (const replica of replicas) {
      await until('replica sync', ms(10_000), async () => (await field(replica.port, 'replication', 'master_link_status')) === 'up')
    }
    // Sentinel knows replicas by the port they announce: their own, so the
    // links matter only until the first failover (each round starts afresh).
    const knowsAll: Probe = async (port) => {
      const reply = await redisCommand(port, ['SENTINEL', 'replicas', MASTER_NAME])
      return Array.isArray(reply) && reply.length === 2
    }
    const sentinels: ManagedServer[] = []
    for (let i = 0; i < 3; i++) {
      const dir = makeTempDir('sentinel')
      const conf = join(dir, 'sentinel.conf')
      sentinels.push(await ManagedServer.launch({
        label: 'redis-sentinel',
        command: 'redis-server',
        cwd: dir,
        args: (port) => {
          writeFileSync(conf, [
            `port ${port}`, `bind ${HOST}`, 'protected-mode no', `dir ${dir}`,
            `sentinel monitor ${MASTER_NAME} ${HOST} ${master.port} 2`,
            `sentinel down-after-milliseconds ${MASTER_NAME} 1000`,
            `sentinel failover-timeout ${MASTER_NAME} ${failoverTimeoutMs}`, '',
          ].join('\n'))
          return [conf, '--sentinel']
        },
        probe: knowsAll,
      }))
      started.push(sentinels[i]!)
    }
    // A majority can only be counted once the Sentinels know one another.
    for (const sentinel of sentinels) {
      await until('sentinels to meet', ms(15_000), async () => {
        const reply = await redisCommand(sentinel.port, ['SENTINEL', 'sentinels', MASTER_NAME])
        return Array.isArray(reply) && reply.length === 2
      })
    }
    return {
      url: `redis+sentinel://${sentinels.map((s) => `${HOST}:${s.port}`).join(',')}/${MASTER_NAME}`,
      master,
      replicas,
      links,
      sentinels,
      holdReplication(hold) {
        for (const link of links) hold ? link.pause() : link.resume()
      },
      async failOver() {
        await master.kill()
        for (const link of links) link.dropConnections()
        let promoted: RedisServer | undefined
        await until('a replica promoted', ms(30_000), async () => {
          const reply = await redisCommand(sentinels[0]!.port, ['SENTINEL', 'get-master-addr-by-name', MASTER_NAME])
          promoted = Array.isArray(reply) ? replicas.find((r) => String(r.port) === reply[1]) : undefined
          return promoted !== undefined && (await field(promoted.port, 'replication', 'role')) === 'master'
        })
        return promoted!
      },
      stop,
    }
  } catch (error) {
    await stop()
    throw error
  }
}

/**
 * Real ZooKeeper servers for tests: one server, or a 3-server ensemble, on
 * free loopback ports. Debian's jar is run directly (QuorumPeerMain), with the
 * admin server off and the client port bound to loopback only. tickTime is
 * 250 ms, so sessions may be 0.5-5 s (2-20 × tickTime).
 */
import { writeFileSync, mkdirSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { ensureCommand, ensureFile } from './install.js'
import { checkPorts, freePorts } from './ports.js'
import { startProxy, type Proxy } from './proxy.js'
import { ManagedServer, makeTempDir, type ServerProcess } from './servers.js'
import { ms } from './timing.js'

export const ZK_TICK_MS = 250

export interface ZkServer extends ServerProcess {
  readonly id: number
}

export interface ZkEnsemble {
  /** 'zk://127.0.0.1:P1[,…]' (no chroot, no session timeout) */
  readonly hosts: string
  readonly servers: ZkServer[]
  /** The server in the given mode now ('leader', 'follower', 'standalone'). */
  mode(server: ZkServer): Promise<string | undefined>
  /**
   * Cuts the quorum link between two servers (both directions), keeping each
   * one's clients connected: only with `{ peerLinks: true }`. Data held
   * meanwhile is thrown away with the connections when healed.
   */
  partition(a: ZkServer, b: ZkServer): void
  heal(): void
  stop(): Promise<void>
}

export interface ZkEnsembleOptions {
  /**
   * Each server reaches each other server's quorum port through its own
   * proxy, so one link can be cut (`partition`). Each server's own line keeps
   * its real port, which it binds.
   */
  readonly peerLinks?: boolean
  /** Ticks a follower may go without hearing its leader before it stops serving (default 8). */
  readonly syncLimit?: number
}

/** Sends a four-letter word; resolves with the whole answer. */
export function fourLetter(port: number, word: string, timeoutMs = ms(1000)): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port })
    let text = ''
    const timer = setTimeout(() => socket.destroy(new Error(`${word} timed out`)), timeoutMs)
    socket.on('connect', () => socket.write(word))
    socket.on('data', (chunk) => (text += chunk.toString()))
    socket.on('end', () => {
      clearTimeout(timer)
      resolve(text)
    })
    socket.on('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
  })
}

const serving = async (port: number): Promise<boolean> => /Mode: (standalone|leader|follower)/.test(await fourLetter(port, 'srvr'))

/** A server that refused its ports (taken meanwhile by another process): the ensemble is started again on new ones. */
const PORT_TROUBLE = /Address already in use|BindException|Invalid config/i
const ENSEMBLE_ATTEMPTS = 3

export async function startZookeeperEnsemble(size = 3, options: ZkEnsembleOptions = {}): Promise<ZkEnsemble> {
  await ensureCommand('java', 'default-jre-headless')
  const jar = await ensureFile(['/usr/share/java/zookeeper.jar', '/usr/share/zookeeper/zookeeper.jar'], 'zookeeper')
  for (let attempt = 1; ; attempt++) {
    try {
      return await launchEnsemble(jar, size, options)
    } catch (error) {
      if (attempt >= ENSEMBLE_ATTEMPTS || !PORT_TROUBLE.test(String((error as Error).message))) throw error
    }
  }
}

async function launchEnsemble(jar: string, size: number, options: ZkEnsembleOptions): Promise<ZkEnsemble> {
  const dir = makeTempDir('zookeeper')
  const ids = Array.from({ length: size }, (_, i) => i + 1)
  // Quorum and election ports of every server, all distinct (freePorts), and
  // distinct from every client port (picked later by the same picker).
  const picked = size > 1 ? await freePorts(size * 2) : []
  const quorum = ids.slice(0, picked.length / 2).map((_, i) => [picked[2 * i]!, picked[2 * i + 1]!] as const)
  // links[i][k]: server i+1's way to server k+1's quorum port.
  const links: (Proxy | undefined)[][] = options.peerLinks
    ? await Promise.all(ids.map((_, i) => Promise.all(quorum.map(([peer], k) => (i === k ? undefined : startProxy(peer))))))
    : []
  // Every line "key=value" with nothing after the value: ZooKeeper reads a trailing comment as part of it.
  const launches = await Promise.allSettled(ids.map((id) => ManagedServer.launch({
    label: `zookeeper ${id}`,
    command: 'java',
    cwd: dir,
    args: (port) => {
      const data = join(dir, `s${id}`)
      mkdirSync(data, { recursive: true })
      if (size > 1) writeFileSync(join(data, 'myid'), `${id}\n`)
      const config = join(dir, `s${id}.cfg`)
      // What ZooKeeper refuses as "Invalid config": a port twice, or out of range.
      checkPorts([port, ...picked, ...links.flat().flatMap((link) => (link ? [link.port] : []))])
      writeFileSync(config, [
        `tickTime=${ZK_TICK_MS}`, 'initLimit=20', `syncLimit=${options.syncLimit ?? 8}`, `dataDir=${data}`,
        `clientPort=${port}`, 'clientPortAddress=127.0.0.1', 'admin.enableServer=false',
        '4lw.commands.whitelist=srvr,ruok,mntr', 'maxClientCnxns=0',
        // Sessions up to 60 s, scaled like every wait of the tests: a busy
        // machine's scaled ttls (30 s × 5) must not pass the ensemble's limit.
        `maxSessionTimeout=${Math.max(60_000, ms(60_000))}`,
        // No fsync per write: tests and benchmarks measure the protocol, not this machine's disk.
        'forceSync=no',
        ...quorum.map(([peer, election], k) => `server.${k + 1}=127.0.0.1:${links[id - 1]?.[k]?.port ?? peer}:${election}`),
        '',
      ].join('\n'))
      // Serial GC and the client compiler only: a much cheaper start-up on a busy 2-core machine.
      return ['-Xmx256m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-Dzookeeper.jmx.log4j.disable=true', '-cp', jar, 'org.apache.zookeeper.server.quorum.QuorumPeerMain', config]
    },
    probe: serving,
  })))
  const failed = launches.find((r): r is PromiseRejectedResult => r.status === 'rejected')
  if (failed) {
    await Promise.allSettled(launches.map((r) => (r.status === 'fulfilled' ? r.value.kill() : undefined)))
    await Promise.allSettled(links.flat().map((l) => l?.close()))
    throw failed.reason
  }
  const servers = launches.map((r) => (r as PromiseFulfilledResult<ManagedServer>).value)
  const members: ZkServer[] = servers.map((server, i) => Object.assign(server, { id: ids[i]! }))
  return {
    hosts: members.map((m) => `127.0.0.1:${m.port}`).join(','),
    servers: members,
    async mode(server) {
      try {
        return /Mode: (\w+)/.exec(await fourLetter(server.port, 'srvr'))?.[1]
      } catch {
        return undefined
      }
    },
    partition(a, b) {
      if (!options.peerLinks) throw new Error('partition() needs startZookeeperEnsemble(size, { peerLinks: true })')
      for (const [from, to] of [[a, b], [b, a]] as const) {
        const link = links[from.id - 1]![to.id - 1]!
        link.pause()
      }
    },
    heal() {
      for (const link of links.flat()) {
        if (!link) continue
        link.dropConnections()
        link.resume()
      }
    },
    async stop() {
      await Promise.allSettled(members.map((m) => m.stop()))
      await Promise.allSettled(links.flat().map((l) => l?.close()))
    },
  }
}

export async function startZookeeper(): Promise<ZkEnsemble> {
  return startZookeeperEnsemble(1)
}

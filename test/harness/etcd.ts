/**
 * Real etcd servers for tests: one member, or a 3-member cluster, on free
 * loopback ports, with the fault handles of servers.ts (kill, pause, resume,
 * restart on the same ports and data directory).
 */
import { execFile } from 'node:child_process'
import { request } from 'node:http'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { ensureCommand } from './install.js'
import { freePorts } from './ports.js'
import { ManagedServer, makeTempDir, type ServerProcess } from './servers.js'
import { ms } from './timing.js'

export interface EtcdMember extends ServerProcess {
  readonly name: string
  /** 'http://127.0.0.1:PORT' */
  readonly endpoint: string
}

export interface EtcdCluster {
  /** 'etcd://127.0.0.1:P1[,…]' */
  readonly url: string
  readonly members: EtcdMember[]
  /** The member that leads now (asks every live member). */
  leader(): Promise<EtcdMember>
  stop(): Promise<void>
}

/** POST to etcd's JSON gateway; resolves with the parsed body. */
export function etcdGateway(port: number, path: string, body: unknown = {}, timeoutMs = ms(1000)): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'POST', timeout: timeoutMs }, (res) => {
      let text = ''
      res.on('data', (chunk: Buffer) => (text += chunk.toString()))
      res.on('end', () => {
        try {
          resolve(JSON.parse(text) as Record<string, unknown>)
        } catch (error) {
          reject(error)
        }
      })
    })
    req.on('timeout', () => req.destroy(new Error('etcd gateway timed out')))
    req.on('error', reject)
    req.end(JSON.stringify(body))
  })
}

/** Ready once the member answers a linearizable read (so the cluster has a leader). */
export const answersLinearizableRead = async (port: number): Promise<boolean> => {
  const reply = await etcdGateway(port, '/v3/kv/range', { key: Buffer.from('probe').toString('base64') })
  return typeof reply.header === 'object'
}

export async function startEtcdCluster(size = 3): Promise<EtcdCluster> {
  await ensureCommand('etcd', 'etcd-server')
  await ensureCommand('etcdctl', 'etcd-client')
  const dir = makeTempDir('etcd')
  const names = Array.from({ length: size }, (_, i) => `m${i + 1}`)
  const peers = await freePorts(size)
  const initialCluster = names.map((n, i) => `${n}=http://127.0.0.1:${peers[i]}`).join(',')
  // Members start together: none is ready before a majority is up.
  const servers = await Promise.all(names.map((name, i) => ManagedServer.launch({
    label: `etcd ${name}`,
    command: 'etcd',
    cwd: dir,
    args: (port) => [
      '--name', name, '--data-dir', join(dir, name),
      '--listen-client-urls', `http://127.0.0.1:${port}`, '--advertise-client-urls', `http://127.0.0.1:${port}`,
      '--listen-peer-urls', `http://127.0.0.1:${peers[i]}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peers[i]}`,
      '--initial-cluster', initialCluster, '--initial-cluster-state', 'new', '--initial-cluster-token', `baton-${peers[0]}`,
      '--log-level', 'error', '--logger', 'zap',
      // Faster elections than the WAN defaults, so a killed leader is replaced in well under a second.
      '--heartbeat-interval', '50', '--election-timeout', '500',
    ],
    probe: answersLinearizableRead,
  })))
  const members: EtcdMember[] = servers.map((server, i) => Object.assign(server, {
    name: names[i]!,
    endpoint: `http://127.0.0.1:${server.port}`,
  }))
  return {
    url: `etcd://${members.map((m) => `127.0.0.1:${m.port}`).join(',')}`,
    members,
    async leader() {
      for (const member of members) {
        try {
          const status = await etcdGateway(member.port, '/v3/maintenance/status')
          const header = status.header as { member_id: string }
          if (status.leader === header.member_id) return member
        } catch {
          // a killed or paused member
        }
      }
      throw new Error('no etcd member claims to lead')
    },
    async stop() {
      await Promise.allSettled(members.map((m) => m.stop()))
    },
  }
}

/** One etcd member. */
export async function startEtcd(): Promise<EtcdCluster> {
  return startEtcdCluster(1)
}

/** The root password of startSecuredEtcd(). */
export const ETCD_ROOT_PASSWORD = 's3cret-root'

/** One etcd member with authentication on: user root, password ETCD_ROOT_PASSWORD. */
export async function startSecuredEtcd(): Promise<EtcdCluster> {
  const secured = await startEtcd()
  const endpoint = secured.members[0]!.endpoint
  const etcdctl = (...args: string[]) =>
    promisify(execFile)('etcdctl', ['--endpoints', endpoint, ...args], { env: { ...process.env, ETCDCTL_API: '3' } })
  await etcdctl('user', 'add', 'root', `--new-user-password=${ETCD_ROOT_PASSWORD}`)
  await etcdctl('auth', 'enable')
  return secured
}

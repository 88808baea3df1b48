/**
 * Real redis-server processes for tests: standalone, sentinel and cluster,
 * each on free loopback ports, with fault-injection handles (SIGSTOP/SIGCONT,
 * SIGKILL, restart on the same port).
 *
 * Every child is tracked in a module-level registry so stopAll() (and, as a
 * last resort, a process 'exit' hook) can make sure no server outlives the
 * test process.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ensureCommand } from './install.js';
import { freePort } from './ports.js';
import { closeAllProxies } from './proxy.js';
import { ms } from './timing.js';

const execFileAsync = promisify(execFile);

const HOST = '127.0.0.1' as const;
const OUTPUT_TAIL_BYTES = 4096;
const MAX_PORT_ATTEMPTS = 5;

export interface ServerProcess {
  readonly port: number;
  readonly host: '127.0.0.1';
  /** pid of the current incarnation (changes after restart()). */
  readonly pid: number;
  /** SIGTERM, wait for exit, SIGKILL after ms(3000). */
  stop(): Promise<void>;
  /** SIGKILL and wait for exit. */
  kill(): Promise<void>;
  /** SIGSTOP: the process keeps its sockets open but stops answering. */
  pause(): void;
  /** SIGCONT. */
  resume(): void;
  /**
   * SIGKILL, then start again on the same port with the same args (and data
   * directory); waits until ready. `downMs`: stay down this long first, as a
   * restart that takes a while.
   */
  restart(options?: { downMs?: number }): Promise<void>;
}

export interface RedisServer extends ServerProcess {
  /** 'redis://127.0.0.1:PORT' */
  readonly url: string;
}

export interface RedisSentinelSetup {
  /** 'redis+sentinel://127.0.0.1:S1,127.0.0.1:S2/mymaster' */
  readonly url: string;
  readonly masterName: 'mymaster';
  readonly master: RedisServer;
  readonly replica: RedisServer;
  readonly sentinels: ServerProcess[];
  stop(): Promise<void>;
}

export interface RedisClusterSetup {
  /** 'redis+cluster://127.0.0.1:P1,127.0.0.1:P2,...' */
  readonly url: string;
  readonly nodes: RedisServer[];
  stop(): Promise<void>;
}

// ---------------------------------------------------------------------------
// Minimal RESP client. Used for readiness probes instead of ioredis so probes
// have exact, predictable timeouts and never emit stray 'error' events.

export type RespValue = string | number | null | Error | RespValue[];

function encodeCommand(args: readonly string[]): Buffer {
  let out = `*${args.length}\r\n`;
  for (const arg of args) out += `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`;
  return Buffer.from(out);
}

/** Parse one RESP2 value at `pos`; undefined when the buffer is incomplete. */
function parseResp(buf: Buffer, pos: number): { value: RespValue; end: number } | undefined {
  const lineEnd = buf.indexOf('\r\n', pos);
  if (lineEnd < 0) return undefined;
  const type = String.fromCharCode(buf[pos] ?? 0);
  const line = buf.toString('utf8', pos + 1, lineEnd);
  const next = lineEnd + 2;
  switch (type) {
    case '+':
      return { value: line, end: next };
    case '-':
      return { value: new Error(line), end: next };
    case ':':
      return { value: Number(line), end: next };
    case '$': {
      const len = Number(line);
      if (len < 0) return { value: null, end: next };
      if (buf.length < next + len + 2) return undefined;
      return { value: buf.toString('utf8', next, next + len), end: next + len + 2 };
    }
    case '*': {
      const count = Number(line);
      if (count < 0) return { value: null, end: next };
      const items: RespValue[] = [];
      let at = next;
      for (let i = 0; i < count; i++) {
        const item = parseResp(buf, at);
        if (!item) return undefined;
        items.push(item.value);
        at = item.end;
      }
      return { value: items, end: at };
    }
    default:
      throw new Error(`unexpected RESP type byte ${JSON.stringify(type)}`);
  }
}

/**
 * Send one command to 127.0.0.1:port on a fresh connection and return the
 * reply. Error replies are returned as Error values (not thrown); network
 * failures and the timeout reject.
 */
export function redisCommand(
  port: number,
  args: readonly string[],
  // Generous: a deadline on a reply that normally comes costs nothing.
  timeoutMs: number = ms(10000),
): Promise<RespValue> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: HOST, port });
    let buffered = Buffer.alloc(0);
    const timer = setTimeout(() => finish(new Error(`${args[0]} to ${HOST}:${port} timed out after ${timeoutMs}ms`)), timeoutMs);
    function finish(err: Error | null, value?: RespValue): void {
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(err);
      else resolve(value ?? null);
    }
    socket.once('connect', () => socket.write(encodeCommand(args)));
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      try {
        const parsed = parseResp(buffered, 0);
        if (parsed) finish(null, parsed.value);
      } catch (err) {
        finish(err as Error);
      }
    });
    socket.once('error', (err) => finish(err));
    socket.once('close', () => finish(new Error(`connection to ${HOST}:${port} closed before a reply`)));
  });
}

/**
 * Send `commands` to 127.0.0.1:port in one write on one fresh connection and
 * return their replies in order: Redis runs them back to back, so nothing
 * another client sends can run between two of them that arrived together
 * (e.g. a CLIENT KILL and the write the killed client must miss).
 */
export function redisPipeline(
  port: number,
  commands: readonly (readonly string[])[],
  timeoutMs: number = ms(10000),
): Promise<RespValue[]> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: HOST, port });
    let buffered = Buffer.alloc(0);
    const replies: RespValue[] = [];
    const timer = setTimeout(() => finish(new Error(`pipeline to ${HOST}:${port} timed out after ${timeoutMs}ms`)), timeoutMs);
    function finish(err: Error | null): void {
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(err);
      else resolve(replies);
    }
    socket.once('connect', () => socket.write(Buffer.concat(commands.map(encodeCommand))));
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      try {
        let at = 0;
        for (let parsed = parseResp(buffered, at); parsed; parsed = parseResp(buffered, at)) {
          replies.push(parsed.value);
          at = parsed.end;
        }
        buffered = buffered.subarray(at);
        if (replies.length === commands.length) finish(null);
      } catch (err) {
        finish(err as Error);
      }
    });
    socket.once('error', (err) => finish(err));
    socket.once('close', () => finish(new Error(`connection to ${HOST}:${port} closed after ${replies.length} of ${commands.length} replies`)));
  });
}

// ---------------------------------------------------------------------------
// Registry and cleanup.

const liveChildren = new Set<ChildProcess>();
const managed = new Set<ManagedServer>();
const tempDirs = new Set<string>();

export function makeTempDir(label: string): string {
  const dir = mkdtempSync(join(tmpdir(), `baton-${label}-`));
  tempDirs.add(dir);
  return dir;
}

function killAllSync(): void {
  for (const child of liveChildren) {
    try {
      if (child.pid !== undefined) process.kill(child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  liveChildren.clear();
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  tempDirs.clear();
}

// A crashed or forgetful test must never leave servers behind. 'exit' covers
// normal exits and uncaught exceptions; the signal hooks cover SIGINT/SIGTERM,
// re-raising the signal when nobody else handles it so the default behaviour
// (terminate) is kept.
process.on('exit', killAllSync);
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(sig, () => {
    killAllSync();
    if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
  });
}

/** SIGKILL every server this process started, close all proxies, remove temp dirs. */
export async function stopAll(): Promise<void> {
  await Promise.allSettled([...managed].map((server) => server.kill()));
  await closeAllProxies();
  managed.clear();
  killAllSync();
}

// ---------------------------------------------------------------------------
// One managed child process.

class OutputTail {
  #text = '';
  append(chunk: Buffer): void {
    this.#text += chunk.toString('utf8');
    if (this.#text.length > OUTPUT_TAIL_BYTES) this.#text = this.#text.slice(-OUTPUT_TAIL_BYTES);
  }
  toString(): string {
    return this.#text;
  }
}

export type Probe = (port: number) => Promise<boolean>;

interface Incarnation {
  readonly child: ChildProcess;
  readonly output: OutputTail;
  exited: boolean;
  readonly exit: Promise<void>;
  exitDescription: string;
}

function sleep(delay: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, delay));
}

function spawnIncarnation(command: string, args: readonly string[], cwd: string): Incarnation {
  const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  const output = new OutputTail();
  // Keep reading (a full pipe would block the server) but do not keep the
  // event loop alive: if a test forgets stopAll() the process still exits and
  // the 'exit' hook kills the child.
  for (const stream of [child.stdout, child.stderr]) {
    stream?.on('data', (chunk: Buffer) => output.append(chunk));
    (stream as unknown as { unref?: () => void } | null)?.unref?.();
  }
  child.unref();
  if (child.pid !== undefined) liveChildren.add(child);
  let markExited!: () => void;
  const incarnation: Incarnation = {
    child,
    output,
    exited: false,
    exit: new Promise<void>((resolve) => (markExited = resolve)),
    exitDescription: '',
  };
  const onGone = (description: string): void => {
    if (incarnation.exited) return;
    incarnation.exited = true;
    incarnation.exitDescription = description;
    liveChildren.delete(child);
    markExited();
  };
  child.once('exit', (code, signal) => onGone(signal ? `killed by ${signal}` : `exited with code ${code}`));
  child.once('error', (err) => onGone(`failed to spawn: ${err.message}`));
  return incarnation;
}

/** Wait up to `timeoutMs` for exit; the timer also keeps the event loop alive. */
async function waitExit(incarnation: Incarnation, timeoutMs: number): Promise<boolean> {
  if (incarnation.exited) return true;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
  const exited = await Promise.race([incarnation.exit.then(() => true as const), timedOut]);
  clearTimeout(timer);
  return exited;
}

class PortInUseError extends Error {}

export class ManagedServer implements RedisServer {
  readonly host = HOST;
  #current: Incarnation;

  private constructor(
    readonly label: string,
    readonly port: number,
    private readonly command: string,
    private readonly args: readonly string[],
    private readonly cwd: string,
    private readonly probe: Probe,
    incarnation: Incarnation,
  ) {
    this.#current = incarnation;
    managed.add(this);
  }

  get url(): string {
    return `redis://${HOST}:${this.port}`;
  }

  get pid(): number {
    return this.#current.child.pid ?? -1;
  }

  /**
   * Spawn and wait until `probe` succeeds. When the port turns out to be taken
   * (freePort() race) try again with a fresh one.
   */
  static async launch(options: {
    label: string;
    command: string;
    cwd: string;
    /** Build the argv for a given port (may allocate further ports, write configs...). */
    args: (port: number) => Promise<string[]> | string[];
    probe: Probe;
  }): Promise<ManagedServer> {
    let lastError: unknown;
    for (let attempt = 0; attempt < MAX_PORT_ATTEMPTS; attempt++) {
      const port = await freePort();
      const args = await options.args(port);
      const incarnation = spawnIncarnation(options.command, args, options.cwd);
      try {
        await waitReady(options.label, port, incarnation, options.probe);
        return new ManagedServer(options.label, port, options.command, args, options.cwd, options.probe, incarnation);
      } catch (err) {
        incarnation.child.kill('SIGKILL');
        await waitExit(incarnation, ms(5000));
        if (!(err instanceof PortInUseError)) throw err;
        lastError = err;
      }
    }
    throw lastError;
  }

  async stop(): Promise<void> {
    const current = this.#current;
    if (current.exited) return;
    signal(current, 'SIGTERM');
    signal(current, 'SIGCONT'); // a paused process would never act on SIGTERM
    if (await waitExit(current, ms(3000))) return;
    await this.kill();
  }

  async kill(): Promise<void> {
    const current = this.#current;
    if (current.exited) return;
    signal(current, 'SIGKILL');
    if (!(await waitExit(current, ms(5000)))) {
      throw new Error(`${this.label} (pid ${this.pid}) did not exit after SIGKILL`);
    }
  }

  /** The tail of what the current incarnation printed (stdout and stderr). */
  output(): string {
    return this.#current.output.toString();
  }

  pause(): void {
    signal(this.#current, 'SIGSTOP');
  }

  resume(): void {
    signal(this.#current, 'SIGCONT');
  }

  async restart(options: { downMs?: number } = {}): Promise<void> {
    await this.kill();
    if (options.downMs) await sleep(options.downMs);
    // Persistence is off (--save '' --appendonly no), so the new incarnation
    // starts empty. Cluster nodes keep their nodes.conf, i.e. their identity
    // and slots, like a real node that crashed and lost its memory.
    const incarnation = spawnIncarnation(this.command, this.args, this.cwd);
    this.#current = incarnation;
    try {
      await waitReady(this.label, this.port, incarnation, this.probe);
    } catch (err) {
      incarnation.child.kill('SIGKILL');
      throw err;
    }
  }
}

function signal(incarnation: Incarnation, sig: NodeJS.Signals): void {
  if (incarnation.exited || incarnation.child.pid === undefined) return;
  try {
    process.kill(incarnation.child.pid, sig);
  } catch {
    // raced with exit
  }
}

/**
 * How long a server may take to answer its first probe. Generous: a server
 * that starts costs nothing of it, and only one that never comes up waits it
 * out (a JVM or a `baton serve` among 28 runnable processes took over 30 s).
 */
const READY_WITHIN_MS = ms(60000);

async function waitReady(label: string, port: number, incarnation: Incarnation, probe: Probe): Promise<void> {
  const deadline = Date.now() + READY_WITHIN_MS;
  let lastProblem = 'never answered';
  for (;;) {
    if (incarnation.exited) {
      const output = incarnation.output.toString();
      const message = `${label} on port ${port} ${incarnation.exitDescription} before becoming ready.\n--- output tail ---\n${output}`;
      throw /Address already in use/i.test(output) ? new PortInUseError(message) : new Error(message);
    }
    try {
      if (await probe(port)) return;
      lastProblem = 'probe not satisfied yet';
    } catch (err) {
      lastProblem = (err as Error).message;
    }
    if (Date.now() >= deadline) {
      throw new Error(
        `${label} on port ${port} not ready after ${READY_WITHIN_MS}ms (${lastProblem}).\n--- output tail ---\n${incarnation.output}`,
      );
    }
    await sleep(50);
  }
}

const pingProbe: Probe = async (port) => (await redisCommand(port, ['PING'], ms(5000))) === 'PONG';

// ---------------------------------------------------------------------------
// Public starters.

const BASE_ARGS = [
  '--bind', HOST, '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--protected-mode', 'no',
  // Redis 7 defaults to diskless replication that waits 5 s for more replicas
  // to join before the first full sync; tests want replicas in sync at once.
  '--repl-diskless-sync-delay', '0',
];

/** Start a standalone redis-server on a free loopback port with persistence off. */
export async function startRedis(options: { args?: string[] } = {}): Promise<RedisServer> {
  await ensureCommand('redis-server', 'redis-server');
  const dir = makeTempDir('redis');
  return ManagedServer.launch({
    label: 'redis-server',
    command: 'redis-server',
    cwd: dir,
    args: (port) => ['--port', String(port), ...BASE_ARGS, '--dir', dir, ...(options.args ?? [])],
    probe: pingProbe,
  });
}

/** Resolve once `check` returns true, or reject after `timeoutMs`. */
async function waitUntil(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastProblem = '';
  for (;;) {
    try {
      if (await check()) return;
    } catch (err) {
      lastProblem = ` (${(err as Error).message})`;
    }
    if (Date.now() >= deadline) throw new Error(`timed out after ${timeoutMs}ms waiting for ${what}${lastProblem}`);
    await sleep(100);
  }
}

async function infoField(port: number, section: string, field: string): Promise<string | undefined> {
  const reply = await redisCommand(port, ['INFO', section]);
  if (typeof reply !== 'string') return undefined;
  return new RegExp(`^${field}:(.*)$`, 'm').exec(reply)?.[1]?.trim();
}

const MASTER_NAME = 'mymaster';

/** One master, one replica and two sentinels monitoring them as 'mymaster'. */
export async function startRedisSentinel(): Promise<RedisSentinelSetup> {
  const started: ServerProcess[] = [];
  try {
    const master = await startRedis();
    started.push(master);
    const replica = await startRedis({ args: ['--replicaof', HOST, String(master.port)] });
    started.push(replica);
    // Tests expect a usable replica, so wait for the initial sync.
    await waitUntil('replica to sync with master', ms(10000), async () =>
      (await infoField(replica.port, 'replication', 'master_link_status')) === 'up');

    const masterAddrMatches: Probe = async (port) => {
      const reply = await redisCommand(port, ['SENTINEL', 'get-master-addr-by-name', MASTER_NAME]);
      return Array.isArray(reply) && reply[0] === HOST && reply[1] === String(master.port);
    };
    const sentinels: ManagedServer[] = [];
    for (let i = 0; i < 2; i++) {
      const dir = makeTempDir('sentinel');
      const confPath = join(dir, 'sentinel.conf');
      const sentinel = await ManagedServer.launch({
        label: 'redis-sentinel',
        command: 'redis-server',
        cwd: dir,
        args: (port) => {
          // Sentinel rewrites its config file at runtime, so it must be a
          // writable file of its own.
          writeFileSync(
            confPath,
            [
              `port ${port}`,
              `bind ${HOST}`,
              'protected-mode no',
              `dir ${dir}`,
              `sentinel monitor ${MASTER_NAME} ${HOST} ${master.port} 1`,
              `sentinel down-after-milliseconds ${MASTER_NAME} 1000`,
              `sentinel failover-timeout ${MASTER_NAME} 5000`,
              '',
            ].join('\n'),
          );
          return [confPath, '--sentinel'];
        },
        probe: masterAddrMatches,
      });
      started.push(sentinel);
      sentinels.push(sentinel);
    }
    return {
      url: `redis+sentinel://${sentinels.map((s) => `${HOST}:${s.port}`).join(',')}/${MASTER_NAME}`,
      masterName: MASTER_NAME,
      master,
      replica,
      sentinels,
      stop: () => stopGroup(started),
    };
  } catch (err) {
    await stopGroup(started);
    throw err;
  }
}

/**
 * A Redis Cluster of `masters` master nodes covering all slots, each with
 * `replicasPerMaster` replicas (none by default; `nodes` lists them all).
 */
export async function startRedisCluster(masters = 3, replicasPerMaster = 0): Promise<RedisClusterSetup> {
  if (!Number.isInteger(masters) || masters < 3) {
    throw new Error(`redis-cli --cluster create needs at least 3 masters, got ${masters}`);
  }
  await ensureCommand('redis-server', 'redis-server');
  await ensureCommand('redis-cli', 'redis-tools');
  const started: ServerProcess[] = [];
  try {
    // allSettled, so that on failure every node that did start is stopped.
    const launches = await Promise.allSettled(
      Array.from({ length: masters * (1 + replicasPerMaster) }, async () => {
        const dir = makeTempDir('cluster');
        const node = await ManagedServer.launch({
          label: 'redis-server (cluster)',
          command: 'redis-server',
          cwd: dir,
          args: async (port) => {
            // The default bus port is port+10000, which overflows for high
            // ephemeral ports; pick the bus port explicitly.
            let busPort = await freePort();
            while (busPort === port) busPort = await freePort();
            return [
              '--port', String(port), ...BASE_ARGS, '--dir', dir,
              '--cluster-enabled', 'yes',
              '--cluster-config-file', join(dir, 'nodes.conf'),
              '--cluster-node-timeout', '2000',
              '--cluster-port', String(busPort),
            ];
          },
          probe: pingProbe,
        });
        started.push(node);
        return node;
      }),
    );
    const failed = launches.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    const nodes = launches.map((r) => (r as PromiseFulfilledResult<ManagedServer>).value);

    const addresses = nodes.map((n) => `${HOST}:${n.port}`);
    try {
      await execFileAsync(
        'redis-cli',
        ['--cluster', 'create', ...addresses, '--cluster-replicas', String(replicasPerMaster), '--cluster-yes'],
        { timeout: ms(20000), maxBuffer: 16 * 1024 * 1024 },
      );
    } catch (err) {
      const e = err as { message: string; stdout?: string; stderr?: string };
      throw new Error(`redis-cli --cluster create failed: ${e.message}\n${(e.stdout ?? '').slice(-2000)}\n${(e.stderr ?? '').slice(-2000)}`);
    }

    // Every node must see the whole cluster before clients rely on it.
    await waitUntil('cluster_state:ok on every node', ms(20000), async () => {
      for (const node of nodes) {
        const info = await redisCommand(node.port, ['CLUSTER', 'INFO']);
        if (typeof info !== 'string' || !/^cluster_state:ok\r?$/m.test(info)) return false;
        if (!new RegExp(`^cluster_known_nodes:${nodes.length}\\r?$`, 'm').test(info)) return false;
      }
      return true;
    });

    return {
      url: `redis+cluster://${addresses.join(',')}`,
      nodes,
      stop: () => stopGroup(started),
    };
  } catch (err) {
    await stopGroup(started);
    throw err;
  }
}

async function stopGroup(servers: readonly ServerProcess[]): Promise<void> {
  await Promise.all(servers.map((s) => s.stop()));
}

/**
 * Adds an ACL user with every right (the default user keeps working without
 * a password, so probes and restarts are unaffected); call again after a
 * restart, which forgets it.
 */
export async function addRedisUser(port: number, user: string, password: string): Promise<void> {
  const reply = await redisCommand(port, ['ACL', 'SETUSER', user, 'reset', 'on', `>${password}`, '~*', '&*', '+@all'], ms(3000));
  if (reply instanceof Error) throw reply;
}

/** A password with the characters URLs get wrong when pasted unencoded ('#', '@', '/'), different per call. */
export function awkwardPassword(): string {
  return `pa#ss@w/rd-${Math.random().toString(36).slice(2, 10)}`;
}

/** The node of `cluster` serving `slot` now (as that node itself says: CLUSTER SLOTS). */
export async function clusterSlotOwner(cluster: RedisClusterSetup, slot: number): Promise<RedisServer> {
  const ranges = await redisCommand(cluster.nodes[0]!.port, ['CLUSTER', 'SLOTS']);
  if (!Array.isArray(ranges)) throw new Error(`CLUSTER SLOTS answered ${String(ranges)}`);
  for (const range of ranges) {
    const [start, end, master] = range as [number, number, [string, number, string]];
    if (slot >= start && slot <= end) {
      const node = cluster.nodes.find((n) => n.port === Number(master[1]));
      if (node) return node;
    }
  }
  throw new Error(`no node of the cluster serves slot ${slot}`);
}

async function nodeId(port: number): Promise<string> {
  const id = await redisCommand(port, ['CLUSTER', 'MYID']);
  if (typeof id !== 'string') throw new Error(`CLUSTER MYID answered ${String(id)}`);
  return id;
}

async function ok(port: number, args: readonly string[]): Promise<RespValue> {
  const reply = await redisCommand(port, args, ms(5000));
  if (reply instanceof Error) throw new Error(`${args.join(' ')} on ${port}: ${reply.message}`);
  return reply;
}

/**
 * Moves one slot of `cluster` to `to`, live, by the steps `redis-cli
 * --cluster reshard` takes: the target IMPORTING, the source MIGRATING, every
 * key MIGRATEd, then every node told the new owner. `whileMigrating` runs
 * with the slot open (MIGRATING/IMPORTING) before any key has moved, and
 * `whileMoving` after the keys moved, before the owner changes: a test
 * starts its calls there. Returns the node the slot left.
 */
export async function moveClusterSlot(
  cluster: RedisClusterSetup,
  slot: number,
  to: RedisServer,
  steps: { whileMigrating?: () => void | Promise<void>; whileMoving?: () => void | Promise<void> } = {},
): Promise<RedisServer> {
  const from = await clusterSlotOwner(cluster, slot);
  if (from === to) throw new Error(`slot ${slot} is already on port ${to.port}`);
  await openSlotMigration(from, to, slot);
  await steps.whileMigrating?.();
  await migrateSlotKeys(from, to, slot);
  await steps.whileMoving?.();
  await assignSlot(cluster, slot, to, from);
  return from;
}

/** The first step of a live slot move: `to` IMPORTING the slot from `from`, `from` MIGRATING it to `to`. */
export async function openSlotMigration(from: RedisServer, to: RedisServer, slot: number): Promise<void> {
  const [fromId, toId] = await Promise.all([nodeId(from.port), nodeId(to.port)]);
  await ok(to.port, ['CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', fromId]);
  await ok(from.port, ['CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', toId]);
}

/**
 * MIGRATEs the slot's keys from `from` to `to` (at most `limit` of them; all
 * by default); `replace` overwrites a key `to` has already. Returns how many moved.
 */
export async function migrateSlotKeys(from: RedisServer, to: RedisServer, slot: number, o: { limit?: number; replace?: boolean } = {}): Promise<number> {
  let moved = 0;
  for (;;) {
    const room = (o.limit ?? Infinity) - moved;
    if (room <= 0) return moved;
    const keys = await ok(from.port, ['CLUSTER', 'GETKEYSINSLOT', String(slot), String(Math.min(100, room))]);
    if (!Array.isArray(keys) || keys.length === 0) return moved;
    await ok(from.port, ['MIGRATE', HOST, String(to.port), '', '0', String(ms(5000)), ...(o.replace ? ['REPLACE'] : []), 'KEYS', ...(keys as string[])]);
    moved += keys.length;
  }
}

/** The last step of a slot move: every node told `to` owns the slot (the target first, then the source, then the others, as redis-cli does). */
export async function assignSlot(cluster: RedisClusterSetup, slot: number, to: RedisServer, from: RedisServer): Promise<void> {
  const toId = await nodeId(to.port);
  await ok(to.port, ['CLUSTER', 'SETSLOT', String(slot), 'NODE', toId]);
  await ok(from.port, ['CLUSTER', 'SETSLOT', String(slot), 'NODE', toId]);
  for (const node of cluster.nodes) if (node !== to && node !== from) await ok(node.port, ['CLUSTER', 'SETSLOT', String(slot), 'NODE', toId]);
}

/** Ids of the connections on `port` subscribed to sharded channels (CLIENT LIST's ssub). */
export async function shardedSubscriberIds(port: number): Promise<string[]> {
  const list = await ok(port, ['CLIENT', 'LIST']);
  return String(list).split('\n').filter((line) => /\bssub=[1-9]/.test(line)).map((line) => /\bid=(\d+)/.exec(line)![1]!);
}

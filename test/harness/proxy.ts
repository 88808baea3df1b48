/**
 * A loopback TCP proxy for fault-injection tests: put it between a client and
 * a server to add latency, freeze traffic (a network partition that keeps the
 * sockets open), or cut every connection at once.
 */
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';

export interface Proxy {
  readonly host: '127.0.0.1';
  /** Port clients should connect to. */
  readonly port: number;
  /** Where new connections go (see retarget). */
  readonly targetPort: number;
  /** Delay every chunk, in both directions, by `ms` (order is preserved). Applies to data received from now on. */
  setDelay(ms: number): void;
  /** Stop forwarding in both directions; data is buffered until resume(). */
  pause(): void;
  /** Flush what was buffered (subject to any delay) and forward again. */
  resume(): void;
  /** Destroy every open client and upstream socket. New connections are still accepted. */
  dropConnections(): void;
  /**
   * Decide per chunk going server → client (a reply or a pushed message):
   * pass it on, hold it back `delayMs` longer (that connection only; order is
   * kept), or drop it and cut that connection, as a network failure right
   * after the server acted would. `undefined` removes the rule.
   */
  onReply(rule: ReplyRule | undefined): void;
  /**
   * Send connections opened from now on to another port (a server that took
   * the old one's place: "restarted empty" without waiting for a process).
   */
  retarget(port: number): void;
  /**
   * A partition that ends in a cut: every reply (and request) is held for
   * `ms`, then every connection is reset and traffic flows again. Resolves
   * once the cut is made.
   */
  partition(ms: number): Promise<void>;
  /** Connections open now, oldest first (to reset a chosen one, e.g. a subscriber). */
  connections(): readonly ProxiedConnection[];
  /** Stop listening and destroy every connection. */
  close(): Promise<void>;
}

export interface ProxiedConnection {
  /** Bytes the server sent on it so far. */
  readonly bytesFromServer: number;
  /** Reset this connection only. */
  destroy(): void;
}

export type ReplyVerdict = 'pass' | 'drop' | { readonly delayMs: number };
export type ReplyRule = (chunk: Buffer) => ReplyVerdict;

/** A rule that drops the first reply matching `match` (and cuts that connection), then passes everything. */
export function dropOnce(match: (chunk: Buffer) => boolean): ReplyRule & { readonly dropped: boolean } {
  const rule = Object.assign((chunk: Buffer): ReplyVerdict => {
    if (rule.dropped || !match(chunk)) return 'pass';
    rule.dropped = true;
    return 'drop';
  }, { dropped: false });
  return rule;
}

/** Whether a server → client chunk is a pub/sub push (message / smessage), not a reply. */
export function isPush(chunk: Buffer): boolean {
  return /^\*3\r\n\$[78]\r\ns?message\r\n/.test(chunk.toString('latin1', 0, 24));
}

interface Control {
  delay: number;
  paused: boolean;
  reply?: ReplyRule | undefined;
}

/** A queued chunk; `null` stands for the sender's FIN. */
interface QueuedChunk {
  readonly data: Buffer | null;
  readonly dueAt: number;
}

/** One direction of one connection: an ordered, delayable, pausable queue. */
class Lane {
  #queue: QueuedChunk[] = [];
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly dest: Socket,
    private readonly control: Control,
  ) {}

  push(data: Buffer | null, extraDelay = 0): void {
    // A chunk is never due before the one ahead of it, so shrinking the
    // delay cannot reorder data.
    const last = this.#queue.at(-1);
    const dueAt = Math.max(performance.now() + this.control.delay + extraDelay, last?.dueAt ?? 0);
    this.#queue.push({ data, dueAt });
    this.pump();
  }

  pump(): void {
    if (this.control.paused || this.#timer !== undefined) return;
    for (;;) {
      const head = this.#queue[0];
      if (!head) return;
      const wait = head.dueAt - performance.now();
      if (wait > 0) {
        this.#timer = setTimeout(() => {
          this.#timer = undefined;
          this.pump();
        }, Math.ceil(wait));
        return;
      }
      this.#queue.shift();
      if (this.dest.destroyed) continue;
      if (head.data === null) this.dest.end();
      else this.dest.write(head.data);
    }
  }

  clear(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#queue = [];
  }
}

class Connection implements ProxiedConnection {
  readonly #lanes: Lane[];
  bytesFromServer = 0;

  constructor(
    private readonly client: Socket,
    private readonly upstream: Socket,
    control: Control,
    onClosed: (c: Connection) => void,
  ) {
    const toUpstream = new Lane(upstream, control);
    const toClient = new Lane(client, control);
    this.#lanes = [toUpstream, toClient];
    client.on('data', (chunk: Buffer) => toUpstream.push(chunk));
    upstream.on('data', (chunk: Buffer) => {
      this.bytesFromServer += chunk.length;
      const verdict = control.reply?.(chunk) ?? 'pass';
      if (verdict === 'drop') this.destroy();
      else toClient.push(chunk, verdict === 'pass' ? 0 : verdict.delayMs);
    });
    // Both sockets are half-open capable, so a FIN travels through the lane
    // behind any delayed data instead of cutting it off.
    client.on('end', () => toUpstream.push(null));
    upstream.on('end', () => toClient.push(null));
    let closed = 0;
    for (const [socket, other] of [[client, upstream], [upstream, client]] as const) {
      socket.on('error', () => undefined); // resets are expected in fault tests
      socket.on('close', (hadError) => {
        // An abrupt close on one side is propagated as an abrupt close.
        if (hadError) other.destroy();
        if (++closed === 2) {
          this.#clearLanes();
          onClosed(this);
        }
      });
    }
  }

  pump(): void {
    for (const lane of this.#lanes) lane.pump();
  }

  destroy(): void {
    this.#clearLanes();
    this.client.destroy();
    this.upstream.destroy();
  }

  #clearLanes(): void {
    for (const lane of this.#lanes) lane.clear();
  }
}

const openProxies = new Set<Proxy>();

/** Close every proxy still open (servers.ts stopAll() calls this). */
export async function closeAllProxies(): Promise<void> {
  await Promise.all([...openProxies].map((p) => p.close()));
}

/** Start a proxy on a free 127.0.0.1 port forwarding to 127.0.0.1:targetPort. */
export async function startProxy(targetPort: number): Promise<Proxy> {
  const control: Control = { delay: 0, paused: false };
  const connections = new Set<Connection>();
  let target = targetPort;

  const server: Server = createServer({ allowHalfOpen: true }, (client) => {
    const upstream = connect({ host: '127.0.0.1', port: target, allowHalfOpen: true });
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    connections.add(new Connection(client, upstream, control, (c) => connections.delete(c)));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: 0 }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;

  let closing: Promise<void> | undefined;
  const proxy: Proxy = {
    host: '127.0.0.1',
    port,
    get targetPort() {
      return target;
    },
    setDelay(delay: number): void {
      if (!Number.isFinite(delay) || delay < 0) throw new RangeError(`delay must be >= 0, got ${delay}`);
      control.delay = delay;
    },
    pause(): void {
      control.paused = true;
    },
    resume(): void {
      control.paused = false;
      for (const c of connections) c.pump();
    },
    dropConnections(): void {
      for (const c of connections) c.destroy();
      connections.clear();
    },
    onReply(rule: ReplyRule | undefined): void {
      control.reply = rule;
    },
    retarget(port: number): void {
      target = port;
    },
    async partition(ms: number): Promise<void> {
      proxy.pause();
      await new Promise((resolve) => setTimeout(resolve, ms));
      proxy.dropConnections();
      proxy.resume();
    },
    connections(): readonly ProxiedConnection[] {
      return [...connections];
    },
    close(): Promise<void> {
      closing ??= new Promise<void>((resolve) => {
        openProxies.delete(proxy);
        server.close(() => resolve());
        proxy.dropConnections();
      });
      return closing;
    },
  };
  openProxies.add(proxy);
  return proxy;
}

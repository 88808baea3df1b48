import { randomUUID } from 'node:crypto'
import { spawn, type ChildProcess } from 'node:child_process'
import diagnostics_channel from 'node:diagnostics_channel'
import { createInterface } from 'node:readline'
import assert from 'node:assert/strict'
import { inspect } from 'node:util'
import { fileURLToPath } from 'node:url'
import { connect, isBatonError, type Baton } from '../../src/index.js'
import { ms } from '../harness/timing.js'
import { unhurried } from '../harness/clients.js'

/** What a store's test file hands to the conformance suite. */
export interface StoreHarness {
  /** The URL clients connect to. */
  readonly url: string
  /** Other OS processes can reach this store (false for memory://). */
  readonly crossProcess: boolean
  /** Freeze / thaw the store server (SIGSTOP / SIGCONT); absent when there is no server. */
  pause?(): void
  resume?(): void
  close(): Promise<void>
  /** A credential inside `url` (a password), which no error, event or inspect output may show. */
  readonly secret?: string
  /** What the fault layer (faults.ts) needs; absent for memory://, which has no network. */
  readonly faults?: FaultSupport
}

/** One fault of the fault layer, for a store's declared exceptions. */
export type FaultCase = 'proxy' | 'lost-reply' | 'partition' | 'partition-holder' | 'wake-reset' | 'loss-reset' | 'stall' | 'late-removal' | 'restart' | 'restart-tokens'

export interface FaultSupport {
  /** The ports of `url`'s servers: each `127.0.0.1:<port>` in `url` is rewritten to a proxy in front of it. */
  readonly ports: readonly number[]
  /** kill -9 the store's server (one node of a quorum store) and start it again: empty where the store keeps nothing on disk. */
  restart(): Promise<void>
  /**
   * Where this store can not keep a property under a fault: the reason,
   * printed by the test, which then checks the weaker property the reason
   * states (or, for 'proxy', skips the proxied faults saying why).
   */
  readonly exceptions?: Partial<Record<FaultCase, string>>
  /**
   * Defects the fault layer found that are not fixed yet and keep the test
   * from running at all: it is skipped, printing "KNOWN DEFECT" and this.
   * A list to empty, not a place for limitations (those are `exceptions`).
   */
  readonly knownDefects?: Partial<Record<FaultCase, string>>
}

export type MakeStore = () => Promise<StoreHarness>

/** Per-suite state: the store, the clients and child processes to clean up. */
export class SuiteContext {
  harness!: StoreHarness
  private readonly clients: Baton[] = []
  private readonly children: ChildProcess[] = []

  async client(): Promise<Baton> {
    const baton = await connect(this.harness.url, unhurried())
    this.clients.push(baton)
    return baton
  }

  /**
   * THE credential check (issue 15, defect 9): `value` (an error with its
   * causes, a client, a lease, an event, a message) shows no credential of
   * the store URL, in its text or in what util.inspect prints of it.
   */
  assertClean(what: string, value: unknown): void {
    const secret = this.harness.secret
    if (!secret) return
    const texts = [typeof value === 'string' ? value : inspect(value, { depth: 12, showHidden: true, getters: false })]
    for (let error = value; error instanceof Error; error = error.cause) texts.push(error.message, String(error.stack))
    for (const text of texts) {
      for (const shape of [secret, encodeURIComponent(secret)]) {
        assert.ok(!text.includes(shape), `${what} shows the store's password:\n${text.slice(0, 2000)}`)
      }
    }
  }

  /**
   * Why this store refuses a kind of lock (its capabilities say it does not
   * offer it), in the store's own words, for `t.skip(reason)`; undefined when
   * it offers it.
   */
  async refuses(kind: 'rwlock' | 'semaphore'): Promise<string | undefined> {
    // Closed here: a test that skips itself at run time gets no afterEach.
    const client = await connect(this.harness.url, unhurried())
    try {
      if (client.driver.capabilities[kind]) return undefined
      const name = this.name(`refused-${kind}`)
      const attempt = kind === 'rwlock' ? client.rwlock(name).read().tryAcquire() : client.semaphore(name, { permits: 2 }).tryAcquire()
      const why = await attempt.then(
        async (lease) => { await lease?.release(); return 'it says it does not offer them, yet granted one' },
        (error: unknown) => (error as Error).message,
      )
      return `${client.store} offers no ${kind}: ${why}`
    } finally {
      await client.close()
    }
  }

  /**
   * Why this store refuses leader election, in its own words, for
   * `t.skip(reason)`; undefined when a campaign on a fresh name is granted.
   */
  async refusesElections(): Promise<string | undefined> {
    const client = await connect(this.harness.url, unhurried())
    try {
      return await client.election(this.name('election-refused')).campaign({ value: 'x', wait: '5s' }).then(
        async (leadership) => {
          await leadership.resign()
          return undefined
        },
        (error: unknown) => {
          if (isBatonError(error, 'INVALID_ARGUMENT')) return `${client.store} refuses leader election: ${(error as Error).message}`
          throw error
        },
      )
    } finally {
      await client.close()
    }
  }

  /** A lock name no other test uses. */
  name(label: string): string {
    return `conformance/${label}/${randomUUID().slice(0, 8)}`
  }

  /** Starts test/conformance/worker.js with a task; lines it prints come back through `lines`. */
  worker(task: WorkerTask): Worker {
    const script = fileURLToPath(new URL('./worker.js', import.meta.url))
    const child = spawn(process.execPath, [script, JSON.stringify({ url: this.harness.url, ...task })], {
      stdio: ['pipe', 'pipe', 'inherit'],
    })
    this.children.push(child)
    return new Worker(child)
  }

  async cleanup(): Promise<void> {
    for (const child of this.children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL')
    let leak: unknown
    try {
      for (const client of this.clients) this.assertClean('util.inspect(client)', client)
    } catch (error) {
      leak = error
    }
    await Promise.all(this.clients.splice(0).map((c) => c.close().catch(() => {})))
    if (leak) throw leak
  }
}

export type WorkerTask =
  | { task: 'counter'; name: string; file: string; iterations: number; ttl: number }
  | { task: 'hold'; name: string; ttl: number; kind?: 'mutex' | 'semaphore'; permits?: number; weight?: number; fair?: boolean }
  | { task: 'wait'; name: string; ttl: number; fair?: boolean }
  /** Reads "wait <id>" lines on stdin: each starts one waiter for a fair mutex; prints "waiting <id>", "granted <id> <token>". */
  | { task: 'queue'; name: string; ttl: number; holdMs: number }
  /** Loops over a semaphore, appending "+" / "-" to `file` on entering / leaving. */
  | { task: 'permits'; name: string; file: string; iterations: number; permits: number; ttl: number }
  /** Campaigns in an election; prints "leader <token>", then "lost <code>" when its signal aborts. */
  | { task: 'campaign'; name: string; ttl: number; value: string; lockDelay?: number }
  /**
   * For each of "sync", "immediate", "timer": holds `name/<look>` (mutex), its election and a
   * multi set (lapse.ts); then stops itself (prints "stopping"); once continued prints
   * "look <look> <json>": what those holds' held / signal say at that first look.
   */
  | { task: 'freeze'; name: string; ttl: number }

export class Worker {
  private readonly seen: string[] = []
  private readonly waiting: { match: (line: string) => boolean; resolve: (line: string) => void }[] = []
  readonly exited: Promise<number | null>

  constructor(readonly child: ChildProcess) {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      this.seen.push(line)
      for (const w of [...this.waiting]) {
        if (w.match(line)) {
          this.waiting.splice(this.waiting.indexOf(w), 1)
          w.resolve(line)
        }
      }
    })
    this.exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)))
  }

  /** Resolves with the first line starting with `prefix` (already printed or to come). */
  line(prefix: string, timeoutMs = ms(15_000)): Promise<string> {
    const found = this.seen.find((l) => l.startsWith(prefix))
    if (found) return Promise.resolve(found)
    return withTimeout(
      new Promise((resolve) => this.waiting.push({ match: (l) => l.startsWith(prefix), resolve })),
      timeoutMs,
      `worker line "${prefix}"`,
    )
  }

  /** The first line starting with `prefix` printed so far, if any. */
  printed(prefix: string): string | undefined {
    return this.seen.find((l) => l.startsWith(prefix))
  }

  send(line: string): void {
    this.child.stdin!.write(`${line}\n`)
  }

  kill9(): void {
    this.child.kill('SIGKILL')
  }
}

export function withTimeout<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs)
    }),
  ])
}

/** Next message on a baton diagnostics channel that matches. */
export function nextEvent<T>(channel: string, match: (message: T) => boolean, timeoutMs = ms(10_000)): Promise<T> {
  let onMessage: (message: unknown) => void
  const found = new Promise<T>((resolve) => {
    onMessage = (message) => {
      if (match(message as T)) resolve(message as T)
    }
    diagnostics_channel.subscribe(channel, onMessage)
  })
  return withTimeout(found, timeoutMs, `event ${channel}`).finally(() => diagnostics_channel.unsubscribe(channel, onMessage))
}

/** Counts messages on a channel that match, until the returned stop() is called. */
export function countEvents<T>(channel: string, match: (message: T) => boolean): { count: () => number; stop: () => void } {
  let n = 0
  const onMessage = (message: unknown) => {
    if (match(message as T)) n++
  }
  diagnostics_channel.subscribe(channel, onMessage)
  return { count: () => n, stop: () => diagnostics_channel.unsubscribe(channel, onMessage) }
}

export function aborted(signal: AbortSignal, timeoutMs = ms(10_000)): Promise<unknown> {
  if (signal.aborted) return Promise.resolve(signal.reason)
  return withTimeout(
    new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true })),
    timeoutMs,
    'lease.signal to abort',
  )
}

/** Resolves with the outcome of the client's next driver release (instrumentation of the real driver). */
export function nextRelease(client: Baton): Promise<boolean> {
  const driver = client.driver
  const original = driver.release.bind(driver)
  return new Promise((resolve, reject) => {
    driver.release = (hold) => {
      driver.release = original
      const done = original(hold)
      done.then(resolve, reject)
      return done
    }
  })
}

export const sleep = (msToSleep: number): Promise<void> => new Promise((r) => setTimeout(r, msToSleep))

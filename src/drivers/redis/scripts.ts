import { createHash } from 'node:crypto'
import type { Cluster, Redis } from 'ioredis'
import { luaSource, scriptPath } from './lua-source.js'

export { scriptPath }

/**
 * The Lua scripts of this driver, read from ./scripts/*.lua next to this file.
 * `--- @include "lib"` pulls in a shared file. Each script is registered on a
 * connection with ioredis' defineCommand (EVALSHA, then EVAL once on NOSCRIPT,
 * per connection) under a name carrying a hash of its source, so two baton
 * versions on one connection never run each other's scripts.
 */
export interface ScriptSpec {
  readonly file: string
  readonly numberOfKeys: number
}

export const SCRIPTS = {
  acquire: { file: 'acquire', numberOfKeys: 1 },
  release: { file: 'release', numberOfKeys: 1 },
  extend: { file: 'extend', numberOfKeys: 1 },
  forceRelease: { file: 'force-release', numberOfKeys: 1 },
  inspect: { file: 'inspect', numberOfKeys: 1 },
  downgrade: { file: 'downgrade', numberOfKeys: 1 },
  proclaim: { file: 'proclaim', numberOfKeys: 1 },
  // Used by the Redlock driver, which runs the scripts above on each of its nodes.
  redlockLine: { file: 'redlock-line', numberOfKeys: 1 },
  raiseToken: { file: 'raise-token', numberOfKeys: 1 },
} as const satisfies Record<string, ScriptSpec>

export type ScriptName = keyof typeof SCRIPTS

/** The source of a script with its includes expanded. */
export function loadScript(file: string, seen: Set<string> = new Set()): string {
  if (seen.has(file)) throw new Error(`include cycle at ${file}.lua`)
  seen.add(file)
  const source = luaSource(file)
  return source.replace(/^--- @include "([\w-]+)"$/gm, (_, name: string) => loadScript(name, new Set(seen)))
}

type Client = Redis | Cluster
type Runner = (...args: (string | number)[]) => Promise<unknown>

interface LoadedScript {
  readonly name: ScriptName
  readonly command: string
  /** undefined: the caller passes the count first (batch.lua). */
  readonly numberOfKeys: number | undefined
  readonly lua: string
}

let loaded: readonly LoadedScript[] | undefined
let batchScript: LoadedScript | undefined

/** batch.lua with every script compiled in as a function of its own KEYS and ARGV. */
function loadBatch(scripts: readonly LoadedScript[]): LoadedScript {
  const bodies = scripts.map((script) => `RUN['${script.name}'] = function(KEYS, ARGV)\n${script.lua}\nend`).join('\n')
  const lua = loadScript('batch').replace(/^--- @scripts$/m, () => bodies)
  const version = createHash('sha1').update(lua).digest('hex').slice(0, 10)
  // No fixed key count: the caller passes it (one key per call).
  return { name: 'batch' as ScriptName, command: `baton_batch_${version}`, numberOfKeys: undefined, lua }
}

/**
 * Reads every script once per process, before any connection exists: a
 * broken install (a .lua file missing from dist/) fails here with the file's
 * path, not as a store that "did not answer".
 */
export function loadScripts(): readonly LoadedScript[] {
  loaded ??= (Object.entries(SCRIPTS) as [ScriptName, ScriptSpec][]).map(([name, spec]) => {
    const lua = loadScript(spec.file)
    const version = createHash('sha1').update(lua).digest('hex').slice(0, 10)
    return { name, command: `baton_${name}_${version}`, numberOfKeys: spec.numberOfKeys, lua }
  })
  batchScript ??= loadBatch(loaded)
  return loaded
}

/** A script call waiting for its turn's batch. */
interface Queued {
  readonly name: ScriptName
  readonly argv: readonly (string | number)[]
  resolve(reply: unknown): void
  reject(error: unknown): void
}

/**
 * A batch goes out as soon as it holds this many calls, not only at the
 * turn's end: Redis then runs the first calls while the client is still
 * making the next ones. One batch per turn (64 flows: 63 calls) left each
 * side idle while the other worked, 66k pairs/s; 4: 76k, 8: 87k, 16: 95k,
 * 32: 96k (64 flows on their own keys, raw 78k, one run each on a quiet
 * machine). A batch of 16 keeps Redis ~60 µs at a time.
 */
const BATCH_LIMIT = 16

/**
 * The script calls of one event-loop turn, sent as one EVALSHA of batch.lua.
 * The first call of a turn goes out at once (a lone call, the sequential
 * case, is never held back); the calls after it in the same turn wait for
 * BATCH_LIMIT of them or the turn's end (setImmediate, after the poll
 * phase, so that a server's requests, each in an I/O callback of its own,
 * share one) and go together, in
 * order, so a client with many flows, or a lock server with many
 * connections, pays one script dispatch per turn instead of one per call,
 * in Redis and in ioredis. Each call keeps its own reply or error.
 * Order on the connection is kept among script calls (a later call is never
 * sent before an earlier one); the driver's other commands (list's SCAN)
 * are reads that need no order with them. One exception, found by a hostile
 * review: after Redis lost its scripts (SCRIPT FLUSH, a restart or a
 * failover) and another client's batch loaded batch.lua again, a turn's
 * first call can be answered NOSCRIPT while the batch sent after it runs;
 * ioredis sends the first again only on that answer, so it runs second. It
 * costs a wrong "busy" (a release then an acquire of one name in one turn),
 * never two holders. Sending every call through batch.lua would close it,
 * at ~2 µs of Redis time per call (measured; docs/hot-path.md).
 */

class ScriptBatch {
  private queue: Queued[] = []
  private open = false

  constructor(
    private readonly sendOne: (name: ScriptName, argv: readonly (string | number)[]) => Promise<unknown>,
    private readonly sendMany: (argv: (string | number)[]) => Promise<unknown>,
  ) {}

  run(name: ScriptName, argv: readonly (string | number)[]): Promise<unknown> {
    if (!this.open) {
      this.open = true
      setImmediate(this.flush)
      return this.sendOne(name, argv)
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ name, argv, resolve, reject })
      if (this.queue.length >= BATCH_LIMIT) this.send()
    })
  }

  private readonly flush = (): void => {
    this.open = false
    this.send()
  }

  private send(): void {
    const queue = this.queue
    if (queue.length === 0) return
    this.queue = []
    if (queue.length === 1) {
      const call = queue[0]!
      this.sendOne(call.name, call.argv).then(call.resolve, call.reject)
      return
    }
    let sent: Promise<unknown>
    // KEYS: each call's one key; ARGV: each call's name, argument count, arguments.
    const argv: (string | number)[] = [queue.length]
    for (const call of queue) argv.push(call.argv[0]!)
    for (const call of queue) {
      argv.push(call.name, call.argv.length - 1)
      for (let i = 1; i < call.argv.length; i++) argv.push(call.argv[i]!)
    }
    try {
      sent = this.sendMany(argv)
    } catch (error) {
      // ioredis answers a closed connection with a rejected promise; anything thrown fails the calls, never strands them.
      sent = Promise.reject(error)
    }
    sent.then((replies) => {
      const list = replies as unknown[]
      queue.forEach((call, i) => {
        const reply = list[i]
        if (reply instanceof Error) call.reject(reply)
        else call.resolve(reply)
      })
    }, (error: unknown) => {
      for (const call of queue) call.reject(error)
    })
  }
}

export class Scripts {
  private readonly commands = new Map<ScriptName, string>()
  /** Batches a turn's calls on one Redis; none on a Cluster, whose calls of one turn go to many slots and nodes. */
  private readonly batch: ScriptBatch | undefined

  constructor(client: Client) {
    for (const script of loadScripts()) {
      client.defineCommand(script.command, { numberOfKeys: script.numberOfKeys, lua: script.lua })
      this.commands.set(script.name, script.command)
    }
    if (!('nodes' in client)) {
      const batch = batchScript!
      client.defineCommand(batch.command, { lua: batch.lua })
      const many = (client as unknown as Record<string, Runner>)[batch.command]!
      this.batch = new ScriptBatch((name, argv) => this.send(client, name, argv), (argv) => many.apply(client, argv))
    }
  }

  run(client: Client, name: ScriptName, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    return this.runArgv(client, name, [...keys, ...args])
  }

  /** Runs a script on its keys then arguments, given as one array (every script takes one key). */
  runArgv(client: Client, name: ScriptName, argv: (string | number)[], batched = true): Promise<unknown> {
    return this.batch && batched ? this.batch.run(name, argv) : this.send(client, name, argv)
  }

  private send(client: Client, name: ScriptName, argv: readonly (string | number)[]): Promise<unknown> {
    const runner = (client as unknown as Record<string, Runner>)[this.commands.get(name)!]!
    return runner.apply(client, argv as (string | number)[])
  }
}

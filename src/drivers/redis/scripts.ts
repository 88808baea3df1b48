import { createHash } from 'node:crypto'
import { Command, type Cluster, type Redis } from 'ioredis'
import { listedKeyOfBase, NAME_KEY_SUFFIXES } from './keys.js'
import { luaSource, scriptPath } from './lua-source.js'

export { scriptPath }

/**
 * The Lua scripts of this driver, read from ./scripts/*.lua next to this file.
 * `--- @include "lib"` pulls in a shared file. A script is called by its
 * SHA1 (EVALSHA), so two baton versions on one Redis never run each
 * other's scripts; a Redis that does not know it yet (first use, a
 * restart, SCRIPT FLUSH, a failover) answers NOSCRIPT and gets it once by
 * EVAL (Scripts.recover).
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
  observe: { file: 'observe', numberOfKeys: 1 },
  // Used by the Redlock driver, which runs the scripts above on each of its nodes.
  redlockLine: { file: 'redlock-line', numberOfKeys: 1 },
  raiseToken: { file: 'raise-token', numberOfKeys: 1 },
  redlockVote: { file: 'redlock-vote', numberOfKeys: 1 },
  redlockUnvote: { file: 'redlock-unvote', numberOfKeys: 1 },
  unlist: { file: 'unlist', numberOfKeys: 1 },
} as const satisfies Record<string, ScriptSpec>

export type ScriptName = keyof typeof SCRIPTS

/**
 * Scripts that must never run twice: a forced release ends whoever holds
 * the name, so a second run ends the next holder's hold too. Every other
 * script is keyed by its owner, and runs again as a no-op. Sent alone
 * (never in a batch), and never written again after a reconnect (see
 * ScriptCommand.toWritable).
 */
const RUN_ONCE: ReadonlySet<ScriptName> = new Set(['forceRelease'])

/**
 * Scripts sent to one Cluster node for many slots, not run on a name: a
 * shebang first line (Redis >= 7 flags), so never compiled into batch.lua
 * and never given a name's keys (clusterArgs). Their callers send them
 * (EVALSHA, EVAL on NOSCRIPT) and fall back to plain commands when a node
 * refuses them (cluster-list.ts).
 */
export const NODE_SCRIPTS = {
  listSlots: { file: 'list-slots', numberOfKeys: 0 },
} as const satisfies Record<string, ScriptSpec>

const nodeScripts = new Map<keyof typeof NODE_SCRIPTS, { readonly sha: string; readonly lua: string }>()

/** A node script's source and SHA1, read once per process. */
export function nodeScript(name: keyof typeof NODE_SCRIPTS): { readonly sha: string; readonly lua: string } {
  let script = nodeScripts.get(name)
  if (!script) {
    const lua = loadScript(NODE_SCRIPTS[name].file)
    nodeScripts.set(name, (script = { sha: sha1(lua), lua }))
  }
  return script
}

/** The source of a script with its includes expanded. */
export function loadScript(file: string, seen: Set<string> = new Set()): string {
  if (seen.has(file)) throw new Error(`include cycle at ${file}.lua`)
  seen.add(file)
  const source = luaSource(file)
  return source.replace(/^--- @include "([\w-]+)"$/gm, (_, name: string) => loadScript(name, new Set(seen)))
}

type Client = Redis | Cluster

interface LoadedScript {
  readonly name: ScriptName
  readonly sha: string
  /** undefined: the caller passes the count first (batch.lua). */
  readonly numberOfKeys: number | undefined
  readonly lua: string
}

const sha1 = (lua: string): string => createHash('sha1').update(lua).digest('hex')

let loaded: readonly LoadedScript[] | undefined
let batchScript: LoadedScript | undefined

/** batch.lua with every script compiled in as a function of its own KEYS and ARGV. */
function loadBatch(scripts: readonly LoadedScript[]): LoadedScript {
  const bodies = scripts.map((script) => `RUN['${script.name}'] = function(KEYS, ARGV)\n${script.lua}\nend`).join('\n')
  const lua = loadScript('batch').replace(/^--- @scripts$/m, () => bodies)
  // No fixed key count: the caller passes it (one key per call).
  return { name: 'batch' as ScriptName, sha: sha1(lua), numberOfKeys: undefined, lua }
}

/**
 * Reads every script once per process, before any connection exists: a
 * broken install (a .lua file missing from dist/) fails here with the file's
 * path, not as a store that "did not answer".
 */
export function loadScripts(): readonly LoadedScript[] {
  loaded ??= (Object.entries(SCRIPTS) as [ScriptName, ScriptSpec][]).map(([name, spec]) => {
    const lua = loadScript(spec.file)
    return { name, sha: sha1(lua), numberOfKeys: spec.numberOfKeys, lua }
  })
  batchScript ??= loadBatch(loaded)
  for (const name of Object.keys(NODE_SCRIPTS) as (keyof typeof NODE_SCRIPTS)[]) nodeScript(name)
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
 * A call made while nothing awaits a reply on the connection goes out at
 * once (a lone call, the sequential case, is never held back); calls made
 * while others are out wait for BATCH_LIMIT of them or the turn's end
 * (setImmediate, after the poll phase, so that a server's requests, each
 * in an I/O callback of its own, share one) and go together, in
 * order, so a client with many flows, or a lock server with many
 * connections, pays one script dispatch per turn instead of one per call,
 * in Redis and in ioredis. Each call keeps its own reply or error.
 * Order on the connection is kept among script calls (a later call is never
 * sent before an earlier one); the driver's other commands (list's SCAN)
 * are reads that need no order with them. One exception, found by hostile
 * reviews: after SCRIPT FLUSH on a live connection, a call answered
 * NOSCRIPT runs again only after the calls sent behind it that Redis could
 * run (a batch written whole, as EVAL, the first time on this connection,
 * or a script another client loaded again). A restart or a failover is not
 * this case: a new connection carries each script whole again
 * (ScriptCommand), also the calls ioredis sends again. For the same owner
 * and name it would be unsafe (an acquire taking back the owner's own hold
 * that a release sent before it then ends), so RedisDriver holds such an
 * acquire until the release is answered; for other owners it costs a wrong
 * "busy". Sending every call through batch.lua would close it, at ~2 µs
 * of Redis time per call (measured; docs/hot-path.md).
 */

class ScriptBatch {
  private queue: Queued[] = []
  private open = false

  constructor(
    private readonly sendOne: (name: ScriptName, argv: readonly (string | number)[]) => Promise<unknown>,
    private readonly sendMany: (argv: (string | number)[]) => Promise<unknown>,
    private readonly evalMany: (argv: (string | number)[]) => Promise<unknown>,
    /** No command on the connection awaits its reply. */
    private readonly idle: () => boolean,
  ) {}

  run(name: ScriptName, argv: readonly (string | number)[]): Promise<unknown> {
    if (!this.open) {
      // Nothing else awaits a reply on the connection (a lone flow, or the
      // first call of a burst): it goes at once, and opens no batch, so a
      // lone flow costs no turn-end callback (an extra event-loop iteration
      // and poll a call: ~3 µs of client CPU a pair, measured). A call made
      // while others are out opens the turn's batch.
      if (this.idle()) return this.sendOne(name, argv)
      this.open = true
      setImmediate(this.flush)
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
    const answer = (replies: unknown): void => {
      const list = replies as unknown[]
      queue.forEach((call, i) => {
        const reply = list[i]
        if (reply instanceof Error) call.reject(reply)
        else call.resolve(reply)
      })
    }
    const fail = (error: unknown): void => {
      for (const call of queue) call.reject(error)
    }
    // NOSCRIPT: Redis ran none of the calls; the whole batch again, by EVAL.
    sent.then(answer, (error: unknown) => (isNoScript(error) ? this.evalMany(argv).then(answer, fail) : fail(error)))
  }
}

/** Redis does not have the script (yet, or any more): it ran nothing. */
function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT')
}

/** Every script call's options: replies as strings. One object for all (ioredis only reads it). */
const COMMAND_OPTIONS = { replyEncoding: 'utf8' } as const

/** The scripts each socket has carried whole (EVAL), so Redis behind it has them. */
const scriptsOnSocket = new WeakMap<object, Set<string>>()

/**
 * A script call: EVALSHA, written as EVAL the first time it goes down a
 * socket (as ioredis' defineCommand does). Decided when it is written, not
 * when it is made: a call ioredis sends again on a new connection (after a
 * reconnect, maybe to a restarted Redis without its scripts) is written
 * whole there too, so it runs in its place, not after a NOSCRIPT answer
 * and behind the calls made after it. One class for every script, so
 * ioredis' Command code stays monomorphic enough to be fast.
 */
class ScriptCommand extends Command {
  /** Its caller was answered with an error (a deadline, a flushed queue): see toWritable. */
  private abandoned = false
  /** The connection it was first written on. */
  private writtenOn: { readonly destroyed?: boolean } | undefined

  constructor(private readonly script: LoadedScript, how: 'evalsha' | 'eval', args: (string | number)[]) {
    super(how, args, COMMAND_OPTIONS)
    const reject = this.reject
    this.reject = (error: Error) => {
      this.abandoned = true
      reject.call(this, error)
    }
  }

  override toWritable(socket: object): string | Buffer {
    // A call whose caller was told it failed must never run later. ioredis
    // keeps a call that was out when the connection dropped, or that waited
    // in its offline queue past its deadline, and writes it after the next
    // reconnect: an attempt the core reported failed (and whose give-back
    // was flushed meanwhile) took the name for a fresh ttl, nobody's. The
    // write can not be taken back from ioredis' queues, so it goes as a
    // PING, whose answer nobody reads. A call still awaited is written again
    // as before (the scripts are idempotent for their owner).
    // A run-once script written on a connection that has closed since, its
    // answer lost with it, may have run: ioredis would write it again after
    // the reconnect (autoResendUnfulfilledCommands), where it would end a
    // hold granted meanwhile (a hostile review: one forced release ended two
    // holds). Its caller is told it failed instead. A Cluster redirect
    // (MOVED, ASK) writes it on another node with the first connection still
    // open: that one was refused unrun, and goes.
    const first = this.writtenOn
    if (first !== undefined && first !== socket && first.destroyed === true && RUN_ONCE.has(this.script.name) && !this.abandoned) {
      this.reject(new Error('Connection is closed: the answer was lost with the connection, and a run-once script is not sent again (it may have run)'))
    }
    this.writtenOn ??= socket as { destroyed?: boolean }
    if (this.abandoned) {
      this.name = 'ping'
      this.args = []
      return super.toWritable(socket)
    }
    let sent = scriptsOnSocket.get(socket)
    if (!sent) scriptsOnSocket.set(socket, (sent = new Set()))
    if (!sent.has(this.script.sha)) {
      sent.add(this.script.sha)
      if (this.name === 'evalsha') {
        this.name = 'eval'
        this.args[0] = this.script.lua
      }
    }
    return super.toWritable(socket)
  }
}

/**
 * Sends the scripts as plain EVALSHA commands, not through ioredis'
 * defineCommand: that path makes a Command subclass per script (ioredis'
 * Command constructor, shared by all, then sees a dozen classes and goes
 * megamorphic), and adds per call a closure, a spread copy of the
 * arguments and a promise for its NOSCRIPT fallback. Measured on a Redlock
 * client over 3 nodes (6 script calls a pair): ioredis' own CPU 18 µs a
 * pair against 3 for node-redlock's plain EVALSHAs (docs/hot-path.md).
 * The NOSCRIPT fallback is the caller's: RedisDriver catches every script
 * error anyway, and calls recover() for this one.
 */
export class Scripts {
  private readonly byName = new Map<ScriptName, LoadedScript>()
  /** Batches a turn's calls on one Redis; none on a Cluster, whose calls of one turn go to many slots and nodes. */
  private readonly batch: ScriptBatch | undefined

  /** Redis Cluster: every call declares all of its name's keys (clusterArgs). */
  private readonly cluster: boolean

  constructor(private readonly client: Client) {
    this.cluster = 'nodes' in client
    for (const script of loadScripts()) this.byName.set(script.name, script)
    if (!('nodes' in client)) {
      const batch = batchScript!
      this.batch = new ScriptBatch(
        (name, argv) => this.send(this.byName.get(name)!, argv),
        (argv) => this.send(batch, argv),
        (argv) => this.send(batch, argv, 'eval'),
        () => client.commandQueue.length === 0,
      )
    }
  }

  /** Runs a script on its keys then arguments, given as one array (every script takes one key). */
  runArgv(name: ScriptName, argv: readonly (string | number)[], batched = true): Promise<unknown> {
    return this.batch && batched && !RUN_ONCE.has(name) ? this.batch.run(name, argv) : this.send(this.byName.get(name)!, argv)
  }

  /**
   * After a NOSCRIPT answer (`error`): the same call again by EVAL, which
   * also puts the script back in Redis' cache; for any other error, undefined.
   * A batched call is sent alone (its own script, not the batch).
   */
  recover(error: unknown, name: ScriptName, argv: readonly (string | number)[]): Promise<unknown> | undefined {
    return isNoScript(error) ? this.send(this.byName.get(name)!, argv, 'eval') : undefined
  }

  private send(script: LoadedScript, argv: readonly (string | number)[], how: 'evalsha' | 'eval' = 'evalsha'): Promise<unknown> {
    return this.client.sendCommand(this.commandOf(script, argv, how)) as Promise<unknown>
  }

  // [replicas hook] A script call as a command, for replicas.ts to pipeline with WAIT behind it.
  command(name: ScriptName, argv: readonly (string | number)[], how: 'evalsha' | 'eval' = 'evalsha'): Command {
    return this.commandOf(this.byName.get(name)!, argv, how)
  }

  private commandOf(script: LoadedScript, argv: readonly (string | number)[], how: 'evalsha' | 'eval'): Command {
    const body = how === 'evalsha' ? script.sha : script.lua
    // ioredis flattens the arguments one level: argv is copied once, there.
    const args = script.numberOfKeys === undefined
      ? [body, argv]
      : this.cluster ? clusterArgs(body, argv) : [body, script.numberOfKeys, argv]
    return new ScriptCommand(script, how, args as (string | number)[])
  }
}

/**
 * A Cluster call's arguments: the base key (KEYS[1], which the scripts read)
 * and after it every key of the name (KEYS[2..], never read by the scripts).
 * A slot being migrated routes a call by the keys it declares: the base
 * alone never exists, so every call was sent (ASK) to the importing node,
 * which had none of a held lock's keys: "free" to inspect, "lost" to its
 * holder's renewal. Declared, the name's keys make the migrating node serve
 * the call while it has them all, answer TRYAGAIN while it has some, and
 * send it on only when none is left; the importing node answers TRYAGAIN
 * until the move ends (the base is missing there too). ioredis retries both
 * (retryDelayOnTryAgain, maxRedirections). The slot's index of names in use
 * (keys.ts listedKey) is declared last: the scripts read it there. A single
 * Redis has no slots to move: it keeps one short key per call.
 */
function clusterArgs(body: string, argv: readonly (string | number)[]): unknown[] {
  const base = String(argv[0])
  return [body, 2 + NAME_KEY_SUFFIXES.length, base, NAME_KEY_SUFFIXES.map((suffix) => base + suffix), listedKeyOfBase(base), argv.slice(1)]
}

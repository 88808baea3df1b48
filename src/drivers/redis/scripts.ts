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
  readonly numberOfKeys: number
  readonly lua: string
}

let loaded: readonly LoadedScript[] | undefined

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
  return loaded
}

export class Scripts {
  private readonly commands = new Map<ScriptName, string>()

  constructor(client: Client) {
    for (const script of loadScripts()) {
      client.defineCommand(script.command, { numberOfKeys: script.numberOfKeys, lua: script.lua })
      this.commands.set(script.name, script.command)
    }
  }

  run(client: Client, name: ScriptName, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    return this.runArgv(client, name, [...keys, ...args])
  }

  /** Runs a script on its keys then arguments, given as one array. */
  runArgv(client: Client, name: ScriptName, argv: (string | number)[]): Promise<unknown> {
    const runner = (client as unknown as Record<string, Runner>)[this.commands.get(name)!]!
    return runner.apply(client, argv)
  }
}

import { backendUnavailable, invalidArgument } from '../../core/errors.js'
import type { RedisClient, RedisTarget } from './connection.js'
import { baseKey } from './keys.js'
import { Scripts, type ScriptName } from './scripts.js'

/**
 * Runs a name's Lua scripts and turns their failures into baton's errors:
 * keys another program wrote (INVALID_ARGUMENT, with the way out) or a store
 * that can not be reached (BACKEND_UNAVAILABLE). Every part of the driver
 * that changes or reads a name goes through here.
 */
export class NameScripts {
  /** The raw script transport (replicas.ts pipelines a script with its WAIT). */
  readonly scripts: Scripts
  /**
   * Script calls of one turn go as one EVALSHA (ScriptBatch). The Redlock
   * driver turns it off on its nodes (RedisDriver.batchScripts says why).
   */
  batch = true

  constructor(client: RedisClient, private readonly target: RedisTarget) {
    this.scripts = new Scripts(client)
  }

  /** Runs a script on `name` (its one key, the name's base) with `args`. */
  call(script: ScriptName, name: string, args: (string | number)[]): Promise<unknown> {
    return this.runArgv(script, name, [baseKey(this.target.keyPrefix, name), ...args])
  }

  /**
   * Runs a script with its whole ARGV (the first being the name's base key).
   * A promise chain, not an async function: one promise a call on the way
   * out where the async form made three (the Redlock driver makes one such
   * call per node for every vote and release).
   */
  runArgv(script: ScriptName, name: string, argv: readonly (string | number)[]): Promise<unknown>
  /** `parse`: applied to the answer in the same step (one promise fewer than a `then` after). */
  runArgv<T>(script: ScriptName, name: string, argv: readonly (string | number)[], parse: (answer: unknown) => T): Promise<T>
  runArgv(script: ScriptName, name: string, argv: readonly (string | number)[], parse?: (answer: unknown) => unknown): Promise<unknown> {
    let sent: Promise<unknown>
    try {
      sent = this.scripts.runArgv(script, argv, this.batch)
    } catch (error) {
      // Anything thrown on the way out fails the call as a rejection, as the async form did.
      sent = Promise.reject(error)
    }
    return sent.then(parse, (error: unknown) => {
      const again = this.scripts.recover(error, script, argv)
      if (!again) throw this.failure(name, error)
      return again.then(parse, (cause: unknown) => {
        throw this.failure(name, cause)
      })
    })
  }

  /** A script's failure as baton's error: keys another program wrote, or a store that can not be reached. */
  private failure(name: string, cause: unknown): Error {
    if (isForeign(cause)) {
      return invalidArgument(
        `the Redis keys of "${name}" (${this.target.keyPrefix}:{${name}}:*) hold a value baton did not write ` +
          `(${foreignDetail(cause)}); another program uses them: pick another name or "prefix", or clear them with forceRelease("${name}")`,
        cause,
      )
    }
    return backendUnavailable(`redis store at ${this.target.display}`, cause)
  }
}

/** A script found keys of a name holding what baton did not write (FOREIGN), or a command hit one (WRONGTYPE). */
function isForeign(cause: unknown): cause is Error {
  return cause instanceof Error && cause.name === 'ReplyError' && /^(FOREIGN|WRONGTYPE)\b/.test(cause.message)
}

function foreignDetail(cause: Error): string {
  return cause.message.replace(/^FOREIGN /, '').replace(/ script: .*$/s, '')
}

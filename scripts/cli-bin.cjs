#!/usr/bin/env node
'use strict'
// The `baton` command: the package's bin, copied to dist/cli/baton.js by
// scripts/bundle-cli.mjs. It runs the bundle cli.js beside it, compiled with a
// V8 code cache when it has one, as Node 22's module.enableCompileCache() would:
// the short commands (run, ls, inspect, release) keep one per command in the
// user's cache directory, written when the command first ran (or when V8 did
// not accept the one there: another V8 flag), and later runs skip compiling
// most of the functions they call. Without a usable cache the bundle compiles
// as usual: slower, same behaviour. NODE_DISABLE_COMPILE_CACHE=1 turns it off.
// CommonJS, so no ES module loader starts for a short command.
const { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } = require('node:fs')
const Module = require('node:module')
const { homedir } = require('node:os')
const { join } = require('node:path')
const { Script } = require('node:vm')

const BUNDLE = join(__dirname, 'cli.js')
/** Set by the build: V8 checks a cache against the source's length only, so the name carries the content's hash. */
const BUNDLE_HASH = '__BUNDLE_HASH__'
/** Commands whose start-up is most of their run time. */
const CACHED_COMMANDS = new Set(['run', 'ls', 'inspect', 'release'])

function cacheFile(command) {
  if (!CACHED_COMMANDS.has(command) || process.env.NODE_DISABLE_COMPILE_CACHE) return undefined
  let base = process.env.XDG_CACHE_HOME
  try {
    base ||= join(homedir(), '.cache')
  } catch {
    return undefined // no home directory to keep a cache in
  }
  const dir = join(base, 'baton')
  return { dir, name: `cli-${BUNDLE_HASH}-${command}-${process.version}-${process.arch}.v8cache`, command }
}

function readCache(file) {
  try {
    return readFileSync(join(file.dir, file.name))
  } catch {
    return undefined
  }
}

/**
 * Written on exit, after the command, so it holds every function the command
 * compiled; replaces this command's caches for other builds or Node versions.
 */
function writeCacheOnExit(file, script) {
  process.once('exit', () => {
    const temporary = join(file.dir, `${file.name}.${process.pid}`)
    try {
      mkdirSync(file.dir, { recursive: true, mode: 0o700 })
      writeFileSync(temporary, script.createCachedData(), { mode: 0o600 })
      renameSync(temporary, join(file.dir, file.name))
      for (const old of readdirSync(file.dir)) {
        if (old !== file.name && old.startsWith('cli-') && old.includes(`-${file.command}-`) && old.endsWith('.v8cache')) rmSync(join(file.dir, old), { force: true })
      }
    } catch {
      // A read-only or full cache directory: the next run compiles again.
      try {
        rmSync(temporary, { force: true })
      } catch {}
    }
  })
}

const argv = process.argv.slice(2)
const file = cacheFile(argv[0])
const cachedData = file && readCache(file)
const script = new Script(Module.wrap(readFileSync(BUNDLE, 'utf8')), { filename: BUNDLE, cachedData })
if (file && (!cachedData || script.cachedDataRejected)) writeCacheOnExit(file, script)
const bundle = { exports: {} }
script.runInThisContext()(bundle.exports, Module.createRequire(BUNDLE), bundle, BUNDLE, __dirname)
bundle.exports.runCli(argv)

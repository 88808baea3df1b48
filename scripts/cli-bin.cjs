#!/usr/bin/env node
'use strict'
// The `baton` command (the package's bin, copied to dist/cli/baton.js by
// scripts/bundle-cli.mjs). It runs the bundle cli.js beside it with V8's code
// cache from the build (cli.js.v8cache): most functions `baton run` needs are
// then already compiled. A cache V8 does not accept (another Node version,
// other V8 flags) is ignored and the bundle compiles as usual: slower, same
// behaviour. CommonJS, so no ES module loader starts for a short command.
const { readFileSync } = require('node:fs')
const Module = require('node:module')
const { join } = require('node:path')
const { Script } = require('node:vm')

const BUNDLE = join(__dirname, 'cli.js')
// V8 checks a cache against the source's length only: the build names the
// cache after the bundle's content hash, so a changed bundle never meets an old cache.
const CACHE = join(__dirname, 'cli.js.__BUNDLE_HASH__.v8cache')

/** Compiles and runs the bundle; returns its exports and the compiled script. */
function loadBundle(cachedData) {
  const script = new Script(Module.wrap(readFileSync(BUNDLE, 'utf8')), { filename: BUNDLE, cachedData })
  const module = { exports: {} }
  script.runInThisContext()(module.exports, Module.createRequire(BUNDLE), module, BUNDLE, __dirname)
  return { cli: module.exports, script }
}

function readCache() {
  try {
    return readFileSync(CACHE)
  } catch {
    return undefined
  }
}

module.exports = { loadBundle, CACHE }

if (require.main === module) loadBundle(readCache()).cli.runCli(process.argv.slice(2))

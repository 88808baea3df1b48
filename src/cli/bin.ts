#!/usr/bin/env node
// The `baton` command, unbundled (tsc's output, module by module). The package's
// bin is the bundle of the same code, dist/cli/baton.js (scripts/bundle-cli.mjs).
import { runCli } from './main.js'

runCli(process.argv.slice(2))

#!/usr/bin/env node
import { parseArgs } from 'node:util'
import { isBatonError } from '../core/errors.js'
import { demo } from './commands/demo.js'
import { serve, SERVE_USAGE } from './commands/serve.js'

const USAGE = `baton: distributed locks for Node.js

usage:
${SERVE_USAGE}
  baton demo [--store URL] [--workers N] [--seconds S]
      workers contending for one lock on the embedded store (or --store), printing tokens and hand-overs

The store comes from --store or BATON_URL (default: memory://, in-process).`

const out = (line: string): void => console.log(line)

/** One entry per command; each parses its own flags with util.parseArgs. */
const COMMANDS: Record<string, (args: string[]) => Promise<number>> = {
  serve: (args) => serve(args, out),
  demo: async (args) => {
    const { values } = parseArgs({
      args,
      strict: true,
      options: { store: { type: 'string' }, workers: { type: 'string' }, seconds: { type: 'string' } },
    })
    const url = values.store ?? process.env.BATON_URL
    await demo({
      ...(url ? { url } : {}),
      workers: positiveInt(values.workers ?? '4', '--workers'),
      seconds: positiveInt(values.seconds ?? '3', '--seconds'),
      out,
    })
    return 0
  },
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    console.log(USAGE)
    return 0
  }
  const run = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined
  if (!run) {
    console.error(`baton: unknown command "${command}"\n\n${USAGE}`)
    return 2
  }
  return run(rest)
}

function positiveInt(text: string, flag: string): number {
  const value = Number(text)
  if (!Number.isInteger(value) || value < 1 || value > 1000) throw new Error(`${flag} must be a whole number from 1 to 1000, got "${text}"`)
  return value
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    const usage = (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')
    console.error(`baton: ${isBatonError(error) ? `${error.code}: ` : ''}${error instanceof Error ? error.message : String(error)}`)
    process.exit(usage || isBatonError(error, 'INVALID_ARGUMENT') ? 2 : 1)
  },
)

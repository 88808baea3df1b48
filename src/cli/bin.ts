#!/usr/bin/env node
import { parseArgs } from 'node:util'
import { isBatonError } from '../core/errors.js'
import { demo } from './commands/demo.js'

const USAGE = `baton: distributed locks for Node.js

usage:
  baton demo [--store URL] [--workers N] [--seconds S]
      workers contending for one lock on the embedded store (or --store), printing tokens and hand-overs

The store comes from --store or BATON_URL (default: memory://, in-process).`

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  switch (command) {
    case 'demo': {
      const { values } = parseArgs({
        args: rest,
        strict: true,
        options: { store: { type: 'string' }, workers: { type: 'string' }, seconds: { type: 'string' } },
      })
      const url = values.store ?? process.env.BATON_URL
      await demo({
        ...(url ? { url } : {}),
        workers: positiveInt(values.workers ?? '4', '--workers'),
        seconds: positiveInt(values.seconds ?? '3', '--seconds'),
        out: (line) => console.log(line),
      })
      return 0
    }
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      console.log(USAGE)
      return 0
    default:
      console.error(`baton: unknown command "${command}"\n\n${USAGE}`)
      return 64
  }
}

function positiveInt(text: string, flag: string): number {
  const value = Number(text)
  if (!Number.isInteger(value) || value < 1 || value > 1000) throw new Error(`${flag} must be a whole number from 1 to 1000, got "${text}"`)
  return value
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`baton: ${isBatonError(error) ? `${error.code}: ` : ''}${error instanceof Error ? error.message : String(error)}`)
    process.exit(isBatonError(error, 'INVALID_ARGUMENT') ? 64 : 1)
  },
)

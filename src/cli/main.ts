import { isBatonError } from '../index.js'
import { cliAdvice, EXIT, exitCodeOf, flushOutput, print, UsageError, type Command } from './common.js'

/**
 * Command table: name → one-line summary and a lazy import, so each command
 * loads only its own code (and the store client it connects to).
 */
const COMMANDS: Record<string, { summary: string; load: () => Promise<Command> }> = {
  serve: { summary: 'the lock server: HTTP API, events, metrics and the dashboard', load: async () => serveCommand(await import('./commands/serve.js')) },
  run: { summary: 'hold a lock while a command runs (flock / consul lock for a fleet)', load: async () => (await import('./commands/run.js')).run },
  ls: { summary: 'list the locks in use', load: async () => (await import('./commands/ls.js')).ls },
  inspect: { summary: 'show who holds and who awaits one lock', load: async () => (await import('./commands/inspect.js')).inspect },
  release: { summary: 'admin: force-release a lock (its holders lose it)', load: async () => (await import('./commands/release.js')).release },
  bench: { summary: 'a short benchmark of a store', load: async () => (await import('./commands/bench.js')).bench },
  verify: { summary: 'check your store keeps the promise: workers, pauses, kills, fenced writes', load: async () => (await import('./commands/verify.js')).verify },
  demo: { summary: 'workers contending for one lock, printing tokens and hand-overs', load: async () => (await import('./commands/demo.js')).demoCommand },
}

/** `baton serve` keeps its own parsing (src/cli/commands/serve.ts); this adapts it to the table. */
function serveCommand(module: typeof import('./commands/serve.js')): Command {
  const usage = `usage:\n${module.SERVE_USAGE}`
  const help = `${usage}

The dashboard is at / of the server; the API is described at /openapi.json.

examples:
  baton serve                                         # embedded store, 127.0.0.1:7420
  baton serve --store redis://10.0.0.5:6379 --host 0.0.0.0
  baton serve --tokens /etc/baton/tokens.json --data-dir /var/lib/baton`
  return {
    usage,
    help,
    async main(args) {
      if (!args.includes('--help') && !args.includes('-h')) return module.serve(args, print)
      print(help)
      return EXIT.ok
    },
  }
}

const USAGE = `baton: distributed locks for Node.js

usage: baton <command> [options]

commands:
${Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(9)}${c.summary}`).join('\n')}

Run "baton <command> --help" for its options and examples.
The store comes from --store URL or BATON_URL (redis://…, http://baton-server:7420, …).
run, ls, inspect and release keep compiled code in $XDG_CACHE_HOME/baton (else
~/.cache/baton) to start quicker; NODE_DISABLE_COMPILE_CACHE=1 turns that off.`

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    const topic = name === 'help' && rest[0] !== undefined && Object.hasOwn(COMMANDS, rest[0]) ? rest[0] : undefined
    console.log(topic ? (await COMMANDS[topic]!.load()).help : USAGE)
    return EXIT.ok
  }
  if (!Object.hasOwn(COMMANDS, name)) {
    console.error(`baton: unknown command "${name}"\n\n${USAGE}`)
    return EXIT.usage
  }
  const command = await COMMANDS[name]!.load()
  try {
    return await command.main(rest)
  } catch (error) {
    // serve parses with util.parseArgs itself: its parse errors are usage errors too.
    const parseError = (error as { code?: unknown }).code?.toString().startsWith('ERR_PARSE_ARGS')
    if (!(error instanceof UsageError) && !isBatonError(error, 'INVALID_ARGUMENT') && !parseError) throw error
    const text = (error as Error).message.replace(/^baton: /, '')
    // parseArgs goes on about `--` tricks after its first sentence.
    const message = parseError ? text.split('. ')[0]! : text
    console.error(`baton ${name}: ${message}\n\n${command.usage}\n\nRun "baton ${name} --help" for more.`)
    return EXIT.usage
  }
}

/** Runs `baton ...argv` and exits the process with its status. */
export function runCli(argv: string[]): void {
  // Exits explicitly (store connections may linger), but only once the output
  // has reached the pipe or file: `baton ls | jq` must get every byte.
  const exit = (code: number) => void flushOutput().then(() => process.exit(code))
  main(argv).then(
    exit,
    (error: unknown) => {
      const message = error instanceof Error ? cliAdvice(error.message.replace(/^baton: /, '')) : String(error)
      console.error(`baton: ${isBatonError(error) ? `${error.code}: ` : ''}${message}`)
      exit(exitCodeOf(error))
    },
  )
}


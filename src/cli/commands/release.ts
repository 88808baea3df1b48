import { connect } from '../../index.js'
import { EXIT, parse, print, STORE_OPTION, storeUrl, UsageError, type Command } from '../common.js'

const USAGE = 'usage: baton release --force <name> [--store URL]'

const HELP = `${USAGE}

Admin: frees <name> whoever holds it. Its holders lose the lock at once (their
lease signal fires; "baton run" stops its command), waiters try again. There is
no release without --force: a hold is released by the process that has it.

options:
  --force        required: says you mean to take the lock from its holders
  --store URL    the store (default: BATON_URL); memory:// is refused.
                 On a baton server with --tokens this needs an admin token.

exit status: 0 a hold was released; 3 nobody held it; 69 store unreachable;
77 refused (not an admin token); 2 bad usage.

example:
  baton release --force deploy/web`

export const release: Command = {
  usage: USAGE,
  help: HELP,
  async main(args) {
    const parsed = parse(args, { ...STORE_OPTION, force: { type: 'boolean' } }, { min: 1, max: 1, names: 'the lock name' })
    if (!parsed) {
      print(HELP)
      return EXIT.ok
    }
    const { values, positionals: [name] } = parsed
    if (!values.force) throw new UsageError('--force is required: releasing takes the lock from whoever holds it')
    const baton = await connect(storeUrl(values.store))
    try {
      const released = await baton.forceRelease(name!)
      print(released ? `released "${name}": its holders lost it` : `"${name}" was not held`)
      return released ? EXIT.ok : EXIT.notFound
    } finally {
      await baton.close().catch(() => undefined)
    }
  },
}

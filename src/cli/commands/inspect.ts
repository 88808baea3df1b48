import { connect } from '../../connect.js'
import { EXIT, JSON_OPTION, parse, print, STORE_OPTION, storeUrl, textTable, timeLeft, toJson, type Command } from '../common.js'
import { jsonView } from './ls.js'

const USAGE = 'usage: baton inspect <name> [--json] [--store URL]'

const HELP = `${USAGE}

Shows one lock: its kind, every holder (mode, fencing token, time left), the
waiting line in the order it will be served, and the last token granted.

options:
  --json         JSON for scripts: the lock, or null when nobody holds or awaits it
  --store URL    the store (default: BATON_URL); memory:// is refused

exit status: 0 the lock is held or awaited; 3 nobody holds or awaits it;
69 store unreachable; 77 refused; 2 bad usage.

examples:
  baton inspect deploy/web
  baton inspect deploy/web --json | jq -r '.holders[0].token'
  baton inspect deploy/web >/dev/null || echo "deploy/web is free"`

export const inspect: Command = {
  usage: USAGE,
  help: HELP,
  async main(args) {
    const parsed = parse(args, { ...STORE_OPTION, ...JSON_OPTION }, { min: 1, max: 1, names: 'the lock name' })
    if (!parsed) {
      print(HELP)
      return EXIT.ok
    }
    const { values, positionals: [name] } = parsed
    const baton = await connect(storeUrl(values.store))
    try {
      const view = await baton.inspect(name!)
      if (values.json) print(toJson(view && jsonView(view)))
      else if (!view) print(`${name}: free (nobody holds or awaits it)`)
      else {
        const now = Date.now()
        print([
          `name:        ${view.name}`,
          `kind:        ${view.kind}${view.kind === 'semaphore' ? `, ${view.permits} permits` : ''}${view.fair ? ', fair' : ''}`,
          `last token:  ${view.lastToken}`,
          `holders:     ${view.holders.length || 'none'}`,
          ...(view.holders.length ? [indent(textTable(['MODE', 'TOKEN', 'HOLDER', 'LEFT'],
            view.holders.map((h) => [h.mode, String(h.token), h.owner, timeLeft(h.expiresAt, now)])))] : []),
          `waiting:     ${view.waiters.length || 'none'}`,
          ...(view.waiters.length ? [indent(textTable(['#', 'MODE', 'OWNER'],
            view.waiters.map((w, i) => [String(i + 1), w.mode, w.owner])))] : []),
        ].join('\n'))
      }
      return view ? EXIT.ok : EXIT.notFound
    } finally {
      await baton.close().catch(() => undefined)
    }
  },
}

const indent = (text: string): string => text.replace(/^/gm, '  ')

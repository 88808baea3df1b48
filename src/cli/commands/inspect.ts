import { connect } from '../../index.js'
import { age, EXIT, JSON_OPTION, parse, print, STORE_OPTION, storeUrl, textTable, timeLeft, toJson, whoText, modeText, type Command } from '../common.js'
import { jsonView } from './ls.js'

const USAGE = 'usage: baton inspect <name> [--json] [--store URL]'

const HELP = `${USAGE}

Shows one lock: its kind, every holder (mode, fencing token, owner, held for,
time left, who: host, pid, program, the command of a "baton run"), the waiting
line in the order it will be served (with who waits and for how long), and the
last token granted.

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
          ...(view.holders.length ? [indent(textTable(['MODE', 'TOKEN', 'HOLDER', 'HELD', 'LEFT', 'WHO'],
            view.holders.map((h) => [
              modeText(h), String(h.token), h.owner, h.since === undefined ? '-' : age(h.since, now), timeLeft(h.expiresAt, now), whoText(h.description),
            ])))] : []),
          `waiting:     ${view.waiters.length || 'none'}`,
          ...(view.waiters.length ? [indent(textTable(['#', 'MODE', 'OWNER', 'WAITING', 'WHO'],
            view.waiters.map((w, i) => [String(i + 1), modeText(w), w.owner, w.since === undefined ? '-' : age(w.since, now), whoText(w.description)])))] : []),
          ...(view.note ? [`note:        ${view.note}`] : []),
        ].join('\n'))
      }
      return view ? EXIT.ok : EXIT.notFound
    } finally {
      await baton.close().catch(() => undefined)
    }
  },
}

const indent = (text: string): string => text.replace(/^/gm, '  ')

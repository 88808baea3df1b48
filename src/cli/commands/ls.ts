import { connect, type LockView } from '../../index.js'
import { isReservedName, RESERVED_NAME_PREFIX } from '../../internal-api.js'
import { age, EXIT, JSON_OPTION, parse, print, STORE_OPTION, storeUrl, textTable, timeLeft, toJson, whoText, modeText, type Command } from '../common.js'

const USAGE = 'usage: baton ls [--prefix P] [--json] [--store URL]'

const HELP = `${USAGE}

Lists the locks in use (held or awaited), sorted by name: one line per holder
with its mode, fencing token, owner, how long it has held the lock, time
left, how many wait in line, and who the holder is (host, pid, program, and
the command of a "baton run"), where the store keeps that.

options:
  --prefix P     only names starting with P (names under "${RESERVED_NAME_PREFIX}", a lock
                 server's own, are listed only when P starts with it)
  --json         a JSON array for scripts (tokens as decimal strings, expiresAt and
                 since in epoch ms, description as the JSON text the store keeps)
  --store URL    the store (default: BATON_URL); memory:// is refused

exit status: 0 listed (also when nothing is in use); 69 store unreachable; 77 refused; 2 bad usage.

examples:
  baton ls --prefix orders/
  baton ls --json | jq -r '.[] | select(.waiters | length > 0) | .name'`

export const ls: Command = {
  usage: USAGE,
  help: HELP,
  async main(args) {
    const parsed = parse(args, { ...STORE_OPTION, ...JSON_OPTION, prefix: { type: 'string' } }, { min: 0, max: 0, names: '' })
    if (!parsed) {
      print(HELP)
      return EXIT.ok
    }
    const { values } = parsed
    const baton = await connect(storeUrl(values.store))
    try {
      const prefix = values.prefix ?? ''
      // A lock server's own holds (its lease secret) are not the operator's locks: shown only when asked for by prefix.
      const locks = (await baton.list({ prefix })).filter((lock) => prefix.startsWith(RESERVED_NAME_PREFIX) || !isReservedName(lock.name))
      print(values.json ? toJson(locks.map(jsonView)) : lockTable(locks))
      return EXIT.ok
    } finally {
      await baton.close().catch(() => undefined)
    }
  },
}

/**
 * A LockView for scripts: the reentrancy count means nothing outside the
 * holding process, and a reserved name's value (a lock server's lease
 * secret) is never printed, so output pasted into a ticket can not leak it.
 */
export function jsonView(view: LockView): object {
  const reserved = isReservedName(view.name)
  return {
    ...view,
    holders: view.holders.map(({ count: _count, ...holder }) => (reserved && holder.value !== undefined ? { ...holder, value: '(hidden)' } : holder)),
  }
}

/** One line per holder (a free but awaited lock gets one line with "-"). */
export function lockTable(locks: readonly LockView[]): string {
  if (locks.length === 0) return 'no locks in use'
  const now = Date.now()
  const rows: string[][] = []
  for (const lock of locks) {
    const kind = `${lock.kind}${lock.kind === 'semaphore' ? `(${lock.permits})` : ''}${lock.fair ? ' fair' : ''}`
    const waiting = String(lock.waiters.length)
    if (lock.holders.length === 0) rows.push([lock.name, kind, '-', '-', '-', '-', '-', waiting, ''])
    lock.holders.forEach((h, i) => {
      const held = h.since === undefined ? '-' : age(h.since, now)
      const cells = [modeText(h), String(h.token), h.owner, held, timeLeft(h.expiresAt, now)]
      rows.push(i === 0 ? [lock.name, kind, ...cells, waiting, whoText(h.description)] : ['', '', ...cells, '', whoText(h.description)])
    })
  }
  return textTable(['NAME', 'KIND', 'MODE', 'TOKEN', 'HOLDER', 'HELD', 'LEFT', 'WAITING', 'WHO'], rows)
}

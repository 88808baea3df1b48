// What one event (grant, release, expire, lost, forced) does to the locks the
// page knows. Separate: both the live stream and a resync's replay apply it.
import { wantDetail } from './details.js'
import { deleteLock, setLock, touch } from './lock-index.js'
import { state } from './state.js'

export function applyEvent(event) {
  const { locks, names } = state
  const lock = locks.get(event.name)
  const same = (h) => h.token === event.token && h.owner === event.owner
  if (event.type === 'grant') {
    const expiresAt = event.expiresAt ?? (event.ttlMs ? event.at + event.ttlMs : undefined)
    const holder = { owner: event.owner, token: event.token, mode: event.mode, expiresAt, since: event.at }
    if (!lock) {
      setLock(locks, names, { name: event.name, kind: event.kind, fair: false, permits: 1, holders: [holder], waiters: [] })
    } else if (!lock.holders.some(same)) {
      lock.holders.push(holder)
      // A waiter granted leaves the line.
      lock.waiters = lock.waiters.filter((w) => w.owner !== event.owner)
    }
    if (state.visible.has(event.name)) wantDetail([event.name])
  } else if (lock) {
    lock.holders = lock.holders.filter((h) => !same(h))
    if (lock.holders.length === 0 && lock.waiters.length === 0) deleteLock(locks, names, event.name)
    else if (state.visible.has(event.name)) wantDetail([event.name])
  }
  touch(event.name)
}

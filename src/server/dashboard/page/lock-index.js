// The locks the page knows, by name, with their names kept sorted (binary
// search: 10,000 names stay cheap to change), and which of the changes need
// the table redrawn. Separate: loading, details and events all change locks
// through it.
import { PAGE_SIZE, state } from './state.js'
import { filtering } from './filter.js'

function lowerBound(names, key) {
  let lo = 0
  let hi = names.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (names[mid] < key) lo = mid + 1
    else hi = mid
  }
  return lo
}

export function setLock(map, names, lock) {
  if (!map.has(lock.name)) {
    names.splice(lowerBound(names, lock.name), 0, lock.name)
    namesChanged(lock.name)
  }
  map.set(lock.name, lock)
}

export function deleteLock(map, names, name) {
  if (!map.delete(name)) return
  const at = lowerBound(names, name)
  if (names[at] === name) names.splice(at, 1)
  namesChanged(name)
}

/**
 * A name came or went. Under the filter, the count and paging change; the
 * rows only when it sorts before the end of the page shown (or the page is
 * not full), so a stream of grants elsewhere costs no redraw of the rows.
 */
function namesChanged(name) {
  if (filtering()) {
    state.filtered = null
    state.tableDirty = true
    return
  }
  if (state.visible.size < PAGE_SIZE || name <= state.lastVisible) state.tableDirty = true
  else state.countDirty = true
}

export function touch(name) {
  // Under a filter or sort a change (waiters, holders) can move the lock in or out.
  if (filtering()) {
    state.filtered = null
    state.tableDirty = true
  } else if (state.visible.has(name)) state.tableDirty = true
}

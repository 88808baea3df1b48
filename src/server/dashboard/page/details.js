// The rows on screen, read again from the server: waiting lines and renewed
// leases, which no event announces. Asked for by whoever sees a row change;
// coalesced into one round of requests.
import { api, fromView } from './api.js'
import { deleteLock, setLock } from './lock-index.js'
import { schedule } from './schedule.js'
import { state } from './state.js'

const detailPending = new Set()
let detailTimer
/** A round still out: the next waits for it, so a slow server is never sent round after round. */
let roundOut = false

/** Fetch these locks again soon (coalesced). */
export function wantDetail(names) {
  for (const name of names) detailPending.add(name)
  if (!roundOut) detailTimer ??= setTimeout(fetchDetails, 300)
}

async function fetchDetails() {
  detailTimer = undefined
  roundOut = true
  try {
    await fetchRound()
  } finally {
    roundOut = false
    if (detailPending.size > 0) detailTimer ??= setTimeout(fetchDetails, 300)
  }
}

async function fetchRound() {
  const names = [...detailPending].filter((n) => state.visible.has(n))
  detailPending.clear()
  const generation = state.generation
  await Promise.all(names.map(async (name) => {
    let view = null
    try {
      // The list, not GET /v1/locks/{name}: a released lock is no error (no 404 in the console).
      const page = await api(`/v1/locks?${new URLSearchParams({ prefix: name, limit: '1' })}`)
      view = page.locks[0]?.name === name ? page.locks[0] : null
    } catch {
      return
    }
    if (generation !== state.generation) return
    if (view) setLock(state.locks, state.names, fromView(view))
    else deleteLock(state.locks, state.names, name)
    state.tableDirty = true
  }))
  schedule()
}

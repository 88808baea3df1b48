// Loading the whole lock list (paged): once at start, drawn as pages come in,
// and again now and then for locks taken on the store by other clients.
import { api, fromView } from './api.js'
import { applyEvent } from './apply-event.js'
import { setLock } from './lock-index.js'
import { schedule } from './schedule.js'
import { LIST_LIMIT, PAGE_SIZE, RESYNC_MS, state } from './state.js'

let loading = null
let reloadAfter = null
let queuedFirst = false

/**
 * Loads every lock, one load at a time: a reload asked for while one runs
 * (the stream reconnected during the first load or a resync) runs after it.
 * Two at once shared the replay of events that arrived meanwhile, and the
 * first to finish ended it for both, so the other swapped in a map without
 * those events: a lock granted then stayed off the page until the next
 * resync, minutes later on a large store.
 */
export function sync(progressive) {
  if (!loading) {
    loading = load(progressive).finally(() => {
      loading = null
    })
    return loading
  }
  // A first load asked for meanwhile (a new token) stays a first load.
  queuedFirst ||= progressive
  reloadAfter ??= loading.catch(() => undefined).then(() => {
    const first = queuedFirst
    reloadAfter = null
    queuedFirst = false
    return sync(first)
  })
  return reloadAfter
}

/**
 * `progressive`: into the live map, drawing as pages come in (the first
 * load); otherwise into a new map swapped in at the end, with the events
 * that arrived meanwhile applied again.
 */
async function load(progressive) {
  const map = progressive ? state.locks : new Map()
  const names = progressive ? state.names : []
  if (!progressive) state.replay = []
  let cursor
  let first = progressive
  try {
    do {
      // The first load asks for one table page first: the server reads only
      // that page from the store, so the table shows at once; the rest of
      // the list streams in behind it a thousand at a time.
      const query = new URLSearchParams({ limit: String(first ? PAGE_SIZE : LIST_LIMIT) })
      first = false
      if (cursor) query.set('cursor', cursor)
      const page = await api(`/v1/locks?${query}`)
      for (const view of page.locks) setLock(map, names, fromView(view))
      cursor = page.nextCursor
      if (progressive) {
        // Show the first page at once; the rest streams in behind it.
        state.tableDirty = true
        schedule()
      }
    } while (cursor)
    if (!progressive) {
      state.locks = map
      state.names = names
      for (const event of state.replay) applyEvent(event)
    }
  } finally {
    state.replay = null
  }
  state.tableDirty = true
  schedule()
}

/**
 * Reloads the whole list now and then, for locks taken on the store by other
 * clients (no event announces them). At least RESYNC_MS apart, and 20 times
 * as long as the last reload took, so a large store is not kept busy listing.
 */
export function resyncLater(lastTookMs = 0) {
  setTimeout(async () => {
    const started = performance.now()
    if (state.replay === null && state.stream && !state.stream.signal.aborted) await sync(false).catch(() => undefined)
    resyncLater(performance.now() - started)
  }, Math.max(RESYNC_MS, 20 * lastTookMs))
}

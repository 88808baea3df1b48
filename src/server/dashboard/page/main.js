// The dashboard's entry (bundled into app.js by scripts/bundle-dashboard.mjs).
// It reads the server's /v1 API: the lock list (paged) once and every
// RESYNC_MS, the events stream for live changes, and the locks on the visible
// page every DETAIL_MS for waiters and renewed leases. Events are applied in
// batches, once per animation frame. A bearer token for reading is held in
// memory only; the admin token of a forced release is asked for each time and
// sent with that one request. This file connects (and reconnects with a new
// token) and wires the views together.
import { api } from './api.js'
import { chartData, everySecond, loadHistory, makeChart, xLabels } from './chart.js'
import { wantDetail } from './details.js'
import { frame } from './draw.js'
import { setupFilterControls } from './filter.js'
import { setupForceRelease } from './force.js'
import { shortToken } from './format.js'
import { resyncLater, sync } from './load.js'
import { drawWith } from './schedule.js'
import { $, DETAIL_MS, state } from './state.js'
import { needToken, setConnection, setOnline } from './status.js'
import { stream } from './stream.js'
import { tick } from './table.js'

/** (Re)connects: the server's info, the chart's history, the events stream, then the list. */
async function start() {
  const generation = ++state.generation
  state.stream?.abort()
  state.locks = new Map()
  state.names = []
  state.queue = []
  try {
    // Not awaited: the first list page need not wait for it (a missing token shows there too).
    const tokenUsed = state.token
    void api('/v1/info').then((info) => {
      if (generation !== state.generation) return
      $('store').textContent = `store: ${info.store}`
      // Answered without a token: the server has none, so a forced release needs none either.
      state.open = tokenUsed === undefined
    }, () => undefined)
    void loadHistory()
    // Events first, so nothing granted while the list loads is missed.
    void stream(generation)
    await sync(true)
  } catch (error) {
    if (generation !== state.generation) return
    if (error.status === 401 || error.status === 403) return needToken(error.status)
    setConnection('error', `cannot list locks: ${error.message}`)
    setOnline(false)
    setTimeout(() => generation === state.generation && start(), 3_000)
    return
  }
  $('auth').hidden = true
}

function setupAuth() {
  $('auth').addEventListener('submit', (event) => {
    event.preventDefault()
    const input = $('auth-token')
    state.token = input.value.trim() || undefined
    input.value = ''
    void start()
  })
}

drawWith(frame)
setupAuth()
setupFilterControls()
setupForceRelease()
makeChart()
setInterval(tick, 250)
setInterval(everySecond, 1_000)
setInterval(() => wantDetail(state.visible), DETAIL_MS)
resyncLater()
void start()

/** For tests and the benchmark: how far the page is. */
window.batonDashboard = {
  shortToken,
  /** Grants on the chart now (history included). */
  get chartGrants() { return chartData()[1].reduce((a, b) => a + b, 0) },
  /** The x-axis labels' left and right edges in CSS pixels, to check they do not overlap. */
  xLabels,
  get firstRenderMs() { return state.firstRenderAt },
  get backlog() { return state.queue.length },
  get applied() { return state.applied },
  get locks() { return state.locks.size },
}

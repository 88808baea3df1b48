// baton dashboard: a plain ES module, no build step. It reads the server's /v1
// API: the lock list (paged) once and every RESYNC_MS, the events stream
// (fetch streaming, since EventSource cannot send an Authorization header) for
// live changes, and the locks on the visible page every DETAIL_MS for waiters
// and renewed leases. Events are applied in batches, once per animation frame.
// A bearer token for reading is held in memory only; the admin token of a
// forced release is asked for each time and sent with that one request.

const PAGE_SIZE = 50
const LIST_LIMIT = 1000
const CHART_SECONDS = 300
const RESYNC_MS = 15_000
const DETAIL_MS = 2_000
const RECENT_MAX = 100
const RECENT_SHOWN = 40
const WAITERS_SHOWN = 5
const SLOW_DRAW_MS = 250

const $ = (id) => document.getElementById(id)

const state = {
  /** Bearer token for reading, when the server needs one (memory only). */
  token: undefined,
  /** name → { name, kind, fair, permits, holders: [{ owner, token, mode, expiresAt }], waiters } */
  locks: new Map(),
  /** Every name of `locks`, sorted as the server sorts them. */
  names: [],
  /** The name filter: a substring, anywhere in the name. */
  filter: '',
  /** Only locks with someone waiting. */
  contendedOnly: false,
  /** 'name' | 'waiters' (most first) | 'age' (oldest hold first). */
  sort: 'name',
  /** The names shown under the filter and sort, when either is on (else all of `names`). */
  filtered: null,
  page: 0,
  /** The server wants no token (its /v1/info answered without one): no admin token to ask for. */
  open: false,
  /** false once the events stream broke: rows are shown as of `offlineSince`, countdowns stop. */
  online: null,
  offlineSince: 0,
  /** Names on the page shown now, and the last of them. */
  visible: new Set(),
  lastVisible: '',
  tableDirty: true,
  countDirty: false,
  /** When counts and the events list were last drawn, and the timer for the next time. */
  slowDrawnAt: 0,
  slowTimer: undefined,
  eventsDirty: false,
  /** Events received and not yet applied (drained once per frame). */
  queue: [],
  /** While a resync runs, events to apply again to its result. */
  replay: null,
  recent: [],
  /** Server epoch ms minus ours, from the events' `at`. */
  clockOffset: 0,
  clockKnown: false,
  /** epoch second (server clock) → { grants, waited } */
  buckets: new Map(),
  scheduled: false,
  stream: null,
  generation: 0,
  firstRenderAt: undefined,
  applied: 0,
}

// ---------------------------------------------------------------------------
// API

class ApiError extends Error {
  constructor(status, message) {
    super(message)
    this.status = status
  }
}

async function api(path, init = {}, token = state.token) {
  const headers = { accept: 'application/json', ...(init.headers ?? {}) }
  if (token) headers.authorization = `Bearer ${token}`
  const res = await fetch(path, { ...init, headers, cache: 'no-store' })
  if (!res.ok) {
    let message = `${res.status} ${res.statusText}`
    try {
      const body = await res.json()
      if (body?.error?.message) message = body.error.message
    } catch { /* not JSON */ }
    throw new ApiError(res.status, message)
  }
  return res.status === 204 ? null : res.json()
}

const lockPath = (name) => `/v1/locks/${encodeURIComponent(name)}`

function fromView(view) {
  return {
    name: view.name, kind: view.kind, fair: view.fair, permits: view.permits,
    holders: view.holders.map((h) => ({ owner: h.owner, token: h.token, mode: h.mode, weight: h.weight, expiresAt: h.expiresAt, since: h.since, description: h.description })),
    waiters: view.waiters.map((w) => ({ owner: w.owner, mode: w.mode, weight: w.weight, since: w.since, description: w.description })),
  }
}

// ---------------------------------------------------------------------------
// The sorted name index (binary search: 10,000 names stay cheap to change)

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

function setLock(map, names, lock) {
  if (!map.has(lock.name)) {
    names.splice(lowerBound(names, lock.name), 0, lock.name)
    namesChanged(lock.name)
  }
  map.set(lock.name, lock)
}

function deleteLock(map, names, name) {
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

const filtering = () => state.filter !== '' || state.contendedOnly || state.sort !== 'name'

/** The names to page through: every name, or those the filter keeps, in the chosen order. */
function shownNames() {
  if (!filtering()) return state.names
  if (state.filtered) return state.filtered
  const { locks, filter, contendedOnly, sort } = state
  let names = state.names.filter((n) => (filter === '' || n.includes(filter)) && (!contendedOnly || locks.get(n).waiters.length > 0))
  if (sort === 'waiters') names = names.sort((a, b) => locks.get(b).waiters.length - locks.get(a).waiters.length || (a < b ? -1 : 1))
  else if (sort === 'age') names = names.sort((a, b) => heldSince(locks.get(a)) - heldSince(locks.get(b)) || (a < b ? -1 : 1))
  state.filtered = names
  return names
}

/** When the lock's oldest hold began (Infinity when unknown or free: sorted last). */
function heldSince(lock) {
  let oldest = Infinity
  for (const h of lock.holders) if (typeof h.since === 'number' && h.since < oldest) oldest = h.since
  return oldest
}

function touch(name) {
  // Under a filter or sort a change (waiters, holders) can move the lock in or out.
  if (filtering()) {
    state.filtered = null
    state.tableDirty = true
  } else if (state.visible.has(name)) state.tableDirty = true
}

// ---------------------------------------------------------------------------
// Loading: the full list (paged), and details of the visible page

/**
 * Loads every lock. `progressive`: into the live map, drawing as pages come
 * in (the first load); otherwise into a new map swapped in at the end, with
 * the events that arrived meanwhile applied again.
 */
async function sync(progressive) {
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

const detailPending = new Set()
let detailTimer

/** Fetch these locks again soon (coalesced). */
function wantDetail(names) {
  for (const name of names) detailPending.add(name)
  detailTimer ??= setTimeout(fetchDetails, 300)
}

async function fetchDetails() {
  detailTimer = undefined
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

// ---------------------------------------------------------------------------
// Events

function applyEvent(event) {
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

function receive(event) {
  if (typeof event.at === 'number') {
    const offset = event.at - Date.now()
    // The smallest delivery delay gives the best estimate; drift slowly otherwise.
    state.clockOffset = !state.clockKnown || offset > state.clockOffset ? offset : state.clockOffset * 0.99 + offset * 0.01
    state.clockKnown = true
  }
  state.queue.push(event)
  schedule()
}

/** Reads the SSE stream with fetch, so it can carry the Authorization header. */
async function stream(generation) {
  for (let attempt = 0; generation === state.generation; attempt++) {
    const abort = new AbortController()
    state.stream = abort
    try {
      const headers = { accept: 'text/event-stream' }
      if (state.token) headers.authorization = `Bearer ${state.token}`
      const res = await fetch('/v1/events', { headers, signal: abort.signal, cache: 'no-store' })
      if (res.status === 401 || res.status === 403) return needToken(res.status)
      if (!res.ok || !res.body) throw new Error(`events: ${res.status}`)
      setConnection('live', 'live')
      setOnline(true)
      if (attempt > 0) void sync(false).catch(() => undefined)
      attempt = 0
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader()
      let buffer = ''
      for (;;) {
        const { value, done } = await reader.read()
        if (done) break
        buffer += value.replace(/\r\n?/g, '\n')
        let end
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          onFrame(buffer.slice(0, end))
          buffer = buffer.slice(end + 2)
        }
      }
    } catch (error) {
      if (abort.signal.aborted) return
    }
    if (generation !== state.generation) return
    setConnection('error', 'disconnected · reconnecting…')
    setOnline(false)
    await new Promise((r) => setTimeout(r, Math.min(10_000, 500 * 2 ** attempt)))
  }
}

function onFrame(frame) {
  let type
  let data = ''
  for (const line of frame.split('\n')) {
    if (line.startsWith('data:')) data += (data ? '\n' : '') + line.slice(line[5] === ' ' ? 6 : 5)
    else if (line.startsWith('event:')) type = line.slice(6).trim()
  }
  if (!data) return
  let event
  try {
    event = JSON.parse(data)
  } catch {
    return
  }
  if (!event || typeof event.name !== 'string') return
  event.type ??= type
  if (!['grant', 'release', 'expire', 'lost', 'forced'].includes(event.type)) return
  receive(event)
}

// ---------------------------------------------------------------------------
// Rendering, batched per animation frame

function schedule() {
  if (state.scheduled) return
  state.scheduled = true
  // Hidden tabs get no animation frames; keep draining so nothing piles up.
  if (document.hidden) setTimeout(frame, 250)
  else requestAnimationFrame(frame)
}

function frame() {
  state.scheduled = false
  if (state.queue.length) {
    const batch = state.queue
    state.queue = []
    for (const event of batch) {
      applyEvent(event)
      state.replay?.push(event)
      if (event.type === 'grant') {
        const second = Math.floor(event.at / 1000)
        const bucket = state.buckets.get(second) ?? { grants: 0, waited: 0 }
        bucket.grants++
        bucket.waited += event.waitedMs ?? 0
        state.buckets.set(second, bucket)
      }
    }
    state.applied += batch.length
    state.recent = batch.slice(-RECENT_MAX).reverse().concat(state.recent).slice(0, RECENT_MAX)
    state.eventsDirty = true
  }
  if (state.tableDirty) renderTable()
  // Counts and the events list at most four times a second: under a stream
  // of events nobody reads faster, and each redraw costs a layout and paint.
  const now = performance.now()
  if (state.countDirty || state.eventsDirty) {
    if (now - state.slowDrawnAt >= SLOW_DRAW_MS) {
      state.slowDrawnAt = now
      if (state.countDirty) renderPaging()
      if (state.eventsDirty) renderEvents()
    } else if (!state.slowTimer) {
      state.slowTimer = setTimeout(() => {
        state.slowTimer = undefined
        schedule()
      }, SLOW_DRAW_MS - (now - state.slowDrawnAt))
    }
  }
}

function renderTable() {
  state.tableDirty = false
  const { from, to, start, list } = renderPaging()
  const shown = list.slice(start, Math.min(to, start + PAGE_SIZE))
  const before = state.visible
  state.visible = new Set(shown)
  state.lastVisible = shown.at(-1) ?? ''
  const fresh = shown.filter((n) => !before.has(n))
  if (fresh.length) wantDetail(fresh)

  const body = document.createDocumentFragment()
  for (const name of shown) body.append(lockRow(state.locks.get(name)))
  $('locks').tBodies[0].replaceChildren(body)
  $('empty').hidden = to - from > 0
  tick()
  if (state.firstRenderAt === undefined && state.names.length > 0) {
    state.firstRenderAt = performance.now()
    document.body.dataset.rendered = 'true'
  }
}

/** The count and page controls; returns the filtered range and where the page starts. */
function renderPaging() {
  state.countDirty = false
  const list = shownNames()
  const [from, to] = [0, list.length]
  const count = to - from
  const pages = Math.max(1, Math.ceil(count / PAGE_SIZE))
  state.page = Math.min(state.page, pages - 1)
  const start = from + state.page * PAGE_SIZE
  const shown = Math.min(PAGE_SIZE, to - start)
  $('page-info').textContent = count
    ? `${(start - from + 1).toLocaleString()}–${(start - from + shown).toLocaleString()} of ${count.toLocaleString()} · page ${state.page + 1}/${pages}`
    : ''
  $('prev').disabled = state.page === 0
  $('next').disabled = state.page >= pages - 1
  return { from, to, start, list }
}

function el(tag, className, text) {
  const node = document.createElement(tag)
  if (className) node.className = className
  if (text !== undefined) node.textContent = text
  return node
}

function lockRow(lock) {
  const row = el('tr')
  row.dataset.name = lock.name
  row.append(el('td', 'name', lock.name))
  row.append(el('td', 'kind', `${lock.kind}${lock.kind === 'semaphore' ? ` (${lock.permits})` : ''}${lock.fair ? ' · fair' : ''}`))
  const holders = el('td', 'holders')
  if (lock.holders.length === 0) holders.append(el('span', 'muted', 'free'))
  for (const h of lock.holders) {
    // Time left first: it is what changes; then mode, token, owner, held since, who.
    const line = el('span', 'holder')
    const left = el('span', 'left', '…')
    if (h.expiresAt !== undefined) left.dataset.expires = String(h.expiresAt)
    const who = whoText(h.description)
    const parts = [left, el('span', 'mode', modeText(h)), tokenNode(h.token), el('span', 'owner', h.owner)]
    if (typeof h.since === 'number') {
      const held = el('span', 'held', '')
      held.dataset.since = String(h.since)
      parts.push(held)
    }
    if (who) parts.push(el('span', 'who', who))
    spaced(line, parts)
    line.title = `${h.mode} · token ${h.token} · owner ${h.owner}${typeof h.since === 'number' ? ` · held since ${clock(h.since)}` : ''}${who ? ` · ${who}` : ''}`
    holders.append(line)
  }
  if (lock.waiters.length) {
    const line = el('ol', 'waiters')
    for (const [i, w] of lock.waiters.slice(0, WAITERS_SHOWN).entries()) {
      const item = el('li', 'waiter')
      const who = whoText(w.description)
      const parts = [el('span', 'pos', `#${i + 1}`), el('span', 'mode', modeText(w)), el('span', 'owner', w.owner)]
      if (typeof w.since === 'number') {
        const waiting = el('span', 'held waiting-since', '')
        waiting.dataset.since = String(w.since)
        waiting.dataset.prefix = 'waiting '
        parts.push(waiting)
      }
      if (who) parts.push(el('span', 'who', who))
      spaced(item, parts)
      item.title = `waiting #${i + 1} · ${w.mode} · owner ${w.owner}${typeof w.since === 'number' ? ` · since ${clock(w.since)}` : ''}${who ? ` · ${who}` : ''}`
      line.append(item)
    }
    if (lock.waiters.length > WAITERS_SHOWN) line.append(el('li', 'muted', `+${lock.waiters.length - WAITERS_SHOWN} more waiting`))
    holders.append(line)
  }
  row.append(holders)
  row.append(el('td', 'waiting', String(lock.waiters.length)))
  const actions = el('td')
  const force = el('button', 'force', 'force release')
  force.type = 'button'
  force.dataset.name = lock.name
  actions.append(force)
  row.append(actions)
  return row
}

/** Appends the parts with a space between them (so copied text reads as it looks). */
function spaced(parent, parts) {
  parts.forEach((part, i) => {
    if (i > 0) parent.append(document.createTextNode(' '))
    parent.append(part)
  })
}

/** A fence token, shortened to its last digits when long; the whole value on hover. */
function tokenNode(token) {
  const text = String(token)
  const node = el('span', 'token', shortToken(text))
  node.title = `token ${text}`
  return node
}

const shortToken = (text) => (text.length > 8 ? `#…${text.slice(-6)}` : `#${text}`)

/** A description (JSON: host, pid, client, cmd) as one short line: "web-1 pid 4242 baton run: ./deploy.sh". */
function whoText(description) {
  if (!description) return ''
  let who
  try {
    who = JSON.parse(description)
  } catch {
    return description
  }
  if (!who || typeof who !== 'object') return description
  return [
    typeof who.host === 'string' ? who.host : '',
    typeof who.pid === 'number' ? `pid ${who.pid}` : '',
    typeof who.client === 'string' ? `${who.client}${typeof who.cmd === 'string' ? ':' : ''}` : '',
    typeof who.cmd === 'string' ? who.cmd : '',
  ].filter(Boolean).join(' ')
}

const clock = (epochMs) => new Date(epochMs).toLocaleTimeString([], { hour12: false })

/** Time left as the command line shows it: "9.5s", "45s", "9m32s", "2.5h". */
function formatLeft(leftMs) {
  if (leftMs <= 0) return 'expired'
  if (leftMs < 10_000) return `${(leftMs / 1000).toFixed(1)}s`
  return formatAge(leftMs)
}

/** A duration as the command line shows it: "45s", "9m32s", "2h05m". */
function formatAge(ms) {
  const s = Math.max(0, Math.floor(ms / 1000))
  if (s < 60) return `${s}s`
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`
}

/** The live countdowns and ages of the visible page; frozen while disconnected. */
function tick() {
  if (state.online === false) return
  const now = Date.now() + state.clockOffset
  const table = $('locks')
  for (const node of table.querySelectorAll('.left[data-expires]')) {
    const left = Number(node.dataset.expires) - now
    node.textContent = formatLeft(left)
    node.classList.toggle('low', left < 5_000)
  }
  for (const node of table.querySelectorAll('.held[data-since]')) {
    node.textContent = `${node.dataset.prefix ?? 'held '}${formatAge(now - Number(node.dataset.since))}`
  }
}

function renderEvents() {
  state.eventsDirty = false
  const list = document.createDocumentFragment()
  for (const event of state.recent.slice(0, RECENT_SHOWN)) {
    const item = el('li', event.type)
    const at = new Date(event.at ?? Date.now())
    item.append(el('span', 't', `${at.toLocaleTimeString([], { hour12: false })} `))
    const token = String(event.token)
    // Who forced it first: the line is cut at the panel's edge.
    const by = event.type === 'forced' ? ` by ${event.by ?? 'someone'}` : ''
    item.append(document.createTextNode(`${event.type} ${event.name}${by} · ${event.owner} · ${event.mode} · #${token.length > 8 ? `…${token.slice(-6)}` : token}`))
    item.title = `${event.type} ${event.name}${by} · owner ${event.owner} · ${event.mode} · token ${token}`
    list.append(item)
  }
  $('events').replaceChildren(list)
}

// ---------------------------------------------------------------------------
// Figures and the chart (uPlot, served by the server from node_modules)

let chart

function makeChart() {
  const box = $('chart')
  chart = new uPlot({
    width: box.clientWidth || 800,
    height: 190,
    legend: { live: false },
    cursor: { drag: { x: false, y: false } },
    scales: { x: { time: true }, grants: { auto: true, range: (_, min, max) => [0, Math.max(5, max)] }, ms: { auto: true, range: (_, min, max) => [0, Math.max(1, max)] } },
    series: [
      {},
      { label: 'grants/s', scale: 'grants', stroke: '#2f6fed', width: 1.5, fill: 'rgba(47,111,237,.08)' },
      { label: 'acquire latency, ms (mean)', scale: 'ms', stroke: '#c2362b', width: 1.5, spanGaps: false },
    ],
    axes: [
      // Room for "12:34:56" between labels, so they never overlap.
      { space: 90, values: (_, splits) => splits.map((s) => clock(s * 1000)) },
      { scale: 'grants', label: 'grants/s', size: 50 },
      { scale: 'ms', label: 'ms', side: 1, grid: { show: false }, size: 50 },
    ],
  }, chartData(), box)
  new ResizeObserver(() => chart.setSize({ width: box.clientWidth, height: 190 })).observe(box)
}

function chartData() {
  const nowSecond = Math.floor((Date.now() + state.clockOffset) / 1000)
  const xs = []
  const grants = []
  const latency = []
  for (let s = nowSecond - CHART_SECONDS; s < nowSecond; s++) {
    const bucket = state.buckets.get(s)
    xs.push(s)
    grants.push(bucket?.grants ?? 0)
    latency.push(bucket ? bucket.waited / bucket.grants : null)
  }
  for (const second of state.buckets.keys()) if (second < nowSecond - CHART_SECONDS) state.buckets.delete(second)
  return [xs, grants, latency]
}

function everySecond() {
  const data = chartData()
  chart?.setData(data)
  const lastGrants = data[1].at(-1)
  const lastLatency = data[2].at(-1)
  let holders = 0
  let waiters = 0
  for (const lock of state.locks.values()) {
    holders += lock.holders.length
    waiters += lock.waiters.length
  }
  $('n-locks').textContent = state.locks.size.toLocaleString()
  $('n-holders').textContent = holders.toLocaleString()
  $('n-waiters').textContent = waiters.toLocaleString()
  $('n-rate').textContent = lastGrants.toLocaleString()
  $('n-latency').textContent = lastLatency === null ? '—' : `${lastLatency.toFixed(1)} ms`
}

/**
 * Reloads the whole list now and then, for locks taken on the store by other
 * clients (no event announces them). At least RESYNC_MS apart, and 20 times
 * as long as the last reload took, so a large store is not kept busy listing.
 */
function resyncLater(lastTookMs = 0) {
  setTimeout(async () => {
    const started = performance.now()
    if (state.replay === null && state.stream && !state.stream.signal.aborted) await sync(false).catch(() => undefined)
    resyncLater(performance.now() - started)
  }, Math.max(RESYNC_MS, 20 * lastTookMs))
}

// ---------------------------------------------------------------------------
// Connection, auth, controls

/** Live, or not: a disconnected page greys its rows, says since when they are stale, and stops counting down. */
function setOnline(online) {
  if (state.online === online) return
  state.online = online
  if (!online) state.offlineSince = Date.now()
  document.body.toggleAttribute('data-offline', !online)
  const banner = $('offline')
  banner.hidden = online
  if (!online) banner.textContent = `Disconnected from the server at ${clock(state.offlineSince)}: the locks below are as they were then, and their countdowns have stopped. Reconnecting…`
}

function setConnection(stateName, text) {
  const pill = $('conn')
  pill.dataset.state = stateName
  pill.textContent = text
}

function needToken(status) {
  setConnection('auth', status === 403 ? 'token refused' : 'token needed')
  $('auth').hidden = false
  $('auth-token').focus()
}

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

function toast(text, bad) {
  const node = $('toast')
  node.textContent = text
  node.className = bad ? 'bad' : ''
  node.hidden = false
  clearTimeout(toast.timer)
  toast.timer = setTimeout(() => (node.hidden = true), 5_000)
}

function setupControls() {
  $('auth').addEventListener('submit', (event) => {
    event.preventDefault()
    const input = $('auth-token')
    state.token = input.value.trim() || undefined
    input.value = ''
    void start()
  })
  const refilter = () => {
    state.filtered = null
    state.page = 0
    state.tableDirty = true
    schedule()
  }
  $('prefix').addEventListener('input', (event) => {
    state.filter = event.target.value
    refilter()
  })
  $('contended').addEventListener('change', (event) => {
    state.contendedOnly = event.target.checked
    refilter()
  })
  $('sort').addEventListener('change', (event) => {
    state.sort = event.target.value
    refilter()
  })
  $('prev').addEventListener('click', () => {
    state.page = Math.max(0, state.page - 1)
    state.tableDirty = true
    schedule()
  })
  $('next').addEventListener('click', () => {
    state.page++
    state.tableDirty = true
    schedule()
  })
  const dialog = $('force')
  $('locks').addEventListener('click', (event) => {
    const button = event.target.closest('button.force')
    if (!button) return
    dialog.dataset.name = button.dataset.name
    $('force-name').textContent = button.dataset.name
    $('force-token').value = ''
    $('force-auth').hidden = state.open
    $('force-open').hidden = !state.open
    dialog.showModal()
  })
  dialog.addEventListener('close', async () => {
    const input = $('force-token')
    const token = input.value.trim()
    input.value = ''
    if (dialog.returnValue !== 'go') return
    const name = dialog.dataset.name
    try {
      const result = await api(lockPath(name), { method: 'DELETE' }, token || undefined)
      toast(result?.released ? `Released "${name}": its holders lost it.` : `"${name}" was not held.`)
      wantDetail([name])
    } catch (error) {
      toast(`Refused: ${error.message}`, true)
    }
  })
}

setupControls()
makeChart()
setInterval(tick, 250)
setInterval(everySecond, 1_000)
setInterval(() => wantDetail(state.visible), DETAIL_MS)
resyncLater()
void start()

/** The server's own grants per second of the last minutes, so the chart starts with them. */
async function loadHistory() {
  try {
    const { seconds } = await api('/v1/history')
    for (const { at, grants, waitedMs } of seconds) {
      const second = Math.floor(at / 1000)
      const bucket = state.buckets.get(second)
      // Seconds this page counted itself keep the larger count (it saw them live).
      if (!bucket || bucket.grants < grants) state.buckets.set(second, { grants, waited: waitedMs })
    }
    everySecond()
  } catch { /* an older server: the chart starts now */ }
}

/** For tests and the benchmark: how far the page is. */
window.batonDashboard = {
  shortToken,
  /** Grants on the chart now (history included). */
  get chartGrants() { return chartData()[1].reduce((a, b) => a + b, 0) },
  /** The x-axis labels' left and right edges in CSS pixels, to check they do not overlap. */
  xLabels() {
    const axis = chart.axes[0]
    const ctx = document.createElement('canvas').getContext('2d')
    ctx.font = chart.axes[0].font?.[0] ?? '12px system-ui'
    const splits = axis._splits ?? []
    const values = axis._values ?? []
    return splits.map((s, i) => {
      const x = chart.valToPos(s, 'x')
      const width = ctx.measureText(String(values[i] ?? '')).width
      return { left: x - width / 2, right: x + width / 2, text: values[i] }
    })
  },
  get firstRenderMs() { return state.firstRenderAt },
  get backlog() { return state.queue.length },
  get applied() { return state.applied },
  get locks() { return state.locks.size },
}

/** A hold's or waiter's mode, with its weight when it takes several permits (weighted permits). */
function modeText(entry) {
  return typeof entry.weight === 'number' && entry.weight > 1 ? `${entry.mode} ×${entry.weight}` : entry.mode
}

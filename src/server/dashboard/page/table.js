// The locks table: the rows of the page shown (holders with their live
// countdowns, waiting lines, the force-release button), drawn from the
// names filter.js chooses.
import { wantDetail } from './details.js'
import { renderPaging } from './filter.js'
import { clock, el, formatAge, formatLeft, modeText, shortToken, spaced, whoText } from './format.js'
import { $, PAGE_SIZE, WAITERS_SHOWN, state } from './state.js'

export function renderTable() {
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

function lockRow(lock) {
  const row = el('tr')
  row.dataset.name = lock.name
  row.append(el('td', 'name', lock.name))
  row.append(el('td', 'kind', `${lock.kind}${lock.kind === 'semaphore' ? ` (${lock.permits})` : ''}${lock.fair ? ' · fair' : ''}`))
  const holders = el('td', 'holders')
  if (lock.holders.length === 0) holders.append(el('span', 'muted', 'free'))
  for (const h of lock.holders) holders.append(holderLine(h))
  if (lock.waiters.length) holders.append(waitingLine(lock.waiters))
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

function holderLine(h) {
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
  return line
}

function waitingLine(waiters) {
  const line = el('ol', 'waiters')
  for (const [i, w] of waiters.slice(0, WAITERS_SHOWN).entries()) {
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
  if (waiters.length > WAITERS_SHOWN) line.append(el('li', 'muted', `+${waiters.length - WAITERS_SHOWN} more waiting`))
  return line
}

/** A fence token, shortened to its last digits when long; the whole value on hover. */
function tokenNode(token) {
  const text = String(token)
  const node = el('span', 'token', shortToken(text))
  node.title = `token ${text}`
  return node
}

/** The live countdowns and ages of the visible page; frozen while disconnected. */
export function tick() {
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

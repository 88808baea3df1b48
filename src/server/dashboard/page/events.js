// The recent events panel: the last events received, newest first.
import { el } from './format.js'
import { $, RECENT_MAX, RECENT_SHOWN, state } from './state.js'

/** A batch of events just applied (oldest first) joins the recent list. */
export function recordEvents(batch) {
  state.recent = batch.slice(-RECENT_MAX).reverse().concat(state.recent).slice(0, RECENT_MAX)
  state.eventsDirty = true
}

export function renderEvents() {
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

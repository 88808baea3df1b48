// The connection as the page shows it: the pill in the header, the offline
// banner (rows greyed, countdowns stopped), and the token prompt.
import { clock } from './format.js'
import { $, state } from './state.js'

/** Live, or not: a disconnected page greys its rows, says since when they are stale, and stops counting down. */
export function setOnline(online) {
  if (state.online === online) return
  state.online = online
  if (!online) state.offlineSince = Date.now()
  document.body.toggleAttribute('data-offline', !online)
  const banner = $('offline')
  banner.hidden = online
  if (!online) banner.textContent = `Disconnected from the server at ${clock(state.offlineSince)}: the locks below are as they were then, and their countdowns have stopped. Reconnecting…`
}

export function setConnection(stateName, text) {
  const pill = $('conn')
  pill.dataset.state = stateName
  pill.textContent = text
}

export function needToken(status) {
  setConnection('auth', status === 403 ? 'token refused' : 'token needed')
  $('auth').hidden = false
  $('auth-token').focus()
}

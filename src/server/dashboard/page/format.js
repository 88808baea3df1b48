// How values read on the page (times, durations, tokens, who holds, modes)
// and the small DOM helpers the views build with. Shared by the table, the
// events list, the chart and the status line; knows no state.

export function el(tag, className, text) {
  const node = document.createElement(tag)
  if (className) node.className = className
  if (text !== undefined) node.textContent = text
  return node
}

/** Appends the parts with a space between them (so copied text reads as it looks). */
export function spaced(parent, parts) {
  parts.forEach((part, i) => {
    if (i > 0) parent.append(document.createTextNode(' '))
    parent.append(part)
  })
}

export const shortToken = (text) => (text.length > 8 ? `#…${text.slice(-6)}` : `#${text}`)

/** A description (JSON: host, pid, client, cmd) as one short line: "web-1 pid 4242 baton run: ./deploy.sh". */
export function whoText(description) {
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

/** A hold's or waiter's mode, with its weight when it takes several permits (weighted permits). */
export function modeText(entry) {
  return typeof entry.weight === 'number' && entry.weight > 1 ? `${entry.mode} ×${entry.weight}` : entry.mode
}

export const clock = (epochMs) => new Date(epochMs).toLocaleTimeString([], { hour12: false })

/** Time left as the command line shows it: "9.5s", "45s", "9m32s", "2.5h". */
export function formatLeft(leftMs) {
  if (leftMs <= 0) return 'expired'
  if (leftMs < 10_000) return `${(leftMs / 1000).toFixed(1)}s`
  return formatAge(leftMs)
}

/** A duration as the command line shows it: "45s", "9m32s", "2h05m". */
export function formatAge(ms) {
  const s = Math.max(0, Math.floor(ms / 1000))
  if (s < 60) return `${s}s`
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`
}

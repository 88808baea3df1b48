// When the page draws: at most once per animation frame, however many changes
// asked for it. Separate so that what changes the state can ask for a redraw
// without importing what draws (draw.js registers itself here).
import { state } from './state.js'

let draw = () => undefined

/** What runs on the next frame (draw.js's frame). */
export function drawWith(frame) {
  draw = frame
}

export function schedule() {
  if (state.scheduled) return
  state.scheduled = true
  // Hidden tabs get no animation frames; keep draining so nothing piles up.
  if (document.hidden) setTimeout(draw, 250)
  else requestAnimationFrame(draw)
}

// One animation frame: the events received since the last one applied as a
// batch, then whatever they made stale redrawn: the table at once, the count
// and the events list at most every SLOW_DRAW_MS.
import { applyEvent } from './apply-event.js'
import { countGrant } from './chart.js'
import { recordEvents, renderEvents } from './events.js'
import { renderPaging } from './filter.js'
import { schedule } from './schedule.js'
import { SLOW_DRAW_MS, state } from './state.js'
import { renderTable } from './table.js'

export function frame() {
  state.scheduled = false
  if (state.queue.length) applyQueued()
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

function applyQueued() {
  const batch = state.queue
  state.queue = []
  for (const event of batch) {
    applyEvent(event)
    state.replay?.push(event)
    if (event.type === 'grant') countGrant(event)
  }
  state.applied += batch.length
  recordEvents(batch)
}

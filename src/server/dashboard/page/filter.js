// Filter, sort and paging: which names the table shows, in what order, which
// page of them, and the toolbar that chooses. Separate from the table, which
// only draws the rows it is given.
import { $, PAGE_SIZE, state } from './state.js'
import { schedule } from './schedule.js'

export const filtering = () => state.filter !== '' || state.contendedOnly || state.sort !== 'name'

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

/** The count and page controls; returns the filtered range and where the page starts. */
export function renderPaging() {
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

/** The toolbar: name filter, contended only, sort, previous and next page. */
export function setupFilterControls() {
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
}

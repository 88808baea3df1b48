// What every view of the page reads and writes: its limits, and one state
// object (the locks as the page knows them, what is shown, what needs
// redrawing). Separate so that the views share it without importing each other.

export const PAGE_SIZE = 50
export const LIST_LIMIT = 1000
export const CHART_SECONDS = 300
export const RESYNC_MS = 15_000
export const DETAIL_MS = 2_000
export const RECENT_MAX = 100
export const RECENT_SHOWN = 40
export const WAITERS_SHOWN = 5
export const SLOW_DRAW_MS = 250

export const $ = (id) => document.getElementById(id)

export const state = {
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

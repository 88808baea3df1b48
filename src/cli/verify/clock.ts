/**
 * The clock of a verify history: milliseconds of the machine's monotonic
 * clock, the same in every process of the machine.
 *
 * Holds, writes and faults are stamped in several processes (the verifier
 * and its workers) and compared with each other, so the clock must be one
 * clock for all of them and must never step. The wall clock (Date.now) steps
 * whenever NTP or an operator sets it: a step back between a grant and the
 * next would look like two holders at once. performance.now() is monotonic
 * but counted from each process's own start, and performance.timeOrigin is
 * that start read from the wall clock, so their sum steps with it too.
 *
 * process.hrtime.bigint() is libuv's uv_hrtime(), which on Linux reads
 * clock_gettime(CLOCK_MONOTONIC): one clock per machine (time since boot,
 * not counting suspend), shared by every process, never set by anyone (NTP
 * only slews its rate). test/cli/verify.test.ts checks that a forked child
 * reads it between two reads of its parent.
 */
export function historyNow(): number {
  return Number(process.hrtime.bigint()) / 1e6
}

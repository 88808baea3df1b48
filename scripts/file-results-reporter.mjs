// A node:test reporter for scripts/test.mjs, beside the spec reporter: writes
// one JSON line per test file with how long it ran, and for one that did not
// pass (`passed: false`) why — a failing test, or the file
// itself failing (its process exited non-zero, was killed at the timeout, or
// outlived its tests: test/harness/linger.ts) — with the reason and the
// linger line if one was printed. The run's summary counts and names these
// files, so a file that failed outside any test is never "0 failed".
//
// A file's verdict is its file-level `test:complete` event (named after the
// file): the `file` of a failing test inside it is where that test was
// written (a shared suite under test/conformance/), not the file that ran it.
const REASONS = {
  subtestsFailed: 'a test failed (✖ above)',
  testTimeoutFailure: 'timed out',
  testCodeFailure: 'the file failed outside its tests (its process exited non-zero)',
  hookFailed: 'a hook failed',
}

export default async function* fileResults(source) {
  const lingering = new Map()
  for await (const event of source) {
    const { file, name } = event.data ?? {}
    if (!file) continue
    if (event.type === 'test:stderr' && /still running .* after its tests/.test(event.data.message ?? '')) {
      lingering.set(file, String(event.data.message).split('\n')[0].trim())
    }
    if (event.type !== 'test:complete' || name !== file) continue
    const seconds = Math.round((event.data.details?.duration_ms ?? 0) / 100) / 10
    if (event.data.details?.passed === false) {
      const type = event.data.details.error?.failureType
      const reason = REASONS[type] ?? String(event.data.details.error?.message ?? type ?? 'failed').split('\n')[0].slice(0, 200)
      yield `${JSON.stringify({ file, passed: false, seconds, reason, ...(lingering.has(file) ? { lingering: lingering.get(file) } : {}) })}\n`
    } else {
      yield `${JSON.stringify({ file, passed: true, seconds })}\n`
    }
  }
}

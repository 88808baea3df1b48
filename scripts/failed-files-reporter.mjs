// A node:test reporter for scripts/test.mjs, beside the spec reporter: writes
// one JSON line per test file that did not pass — a failing test, or the file
// itself failing (its process exited non-zero, was killed at the timeout, or
// outlived its tests: test/harness/linger.ts) — with the first reason and the
// linger line if one was printed. The run's summary counts and names these
// files, so a file that failed outside any test is never "0 failed".
export default async function* failedFiles(source) {
  const failed = new Map()
  const lingering = new Map()
  for await (const event of source) {
    const file = event.data?.file
    if (!file) continue
    if (event.type === 'test:stderr' && /still running .* after its tests/.test(event.data.message ?? '')) {
      lingering.set(file, String(event.data.message).split('\n')[0].trim())
    }
    if (event.type === 'test:fail' && !failed.has(file)) {
      const error = event.data.details?.error
      const cause = error?.cause
      const reason = error?.failureType === 'testTimeoutFailure' ? 'timed out'
        : event.data.name === file ? 'the file failed outside its tests (its process exited non-zero)'
          : `${event.data.name}: ${String(cause?.message ?? error?.message ?? '').split('\n')[0].slice(0, 200)}`
      failed.set(file, reason)
    }
  }
  for (const [file, reason] of failed) yield `${JSON.stringify({ file, reason, ...(lingering.has(file) ? { lingering: lingering.get(file) } : {}) })}\n`
}

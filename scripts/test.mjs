// Runs every compiled test file (dist/test/**/*.test.js) with node's test runner.
// `npm test -- redis` runs only the files whose path contains "redis".
//
// Files run in parallel, BATON_TEST_JOBS at a time (default 3): every file
// starts its own servers on free loopback ports, so files share nothing but
// the CPU. Most of a file's time is spent waiting on ttls, hand-overs and
// server start-up, not computing, so three at a time on two cores keeps the
// whole run short without starving the fault tests (their waits are scaled by
// BATON_TEST_TIMING and none asserts a duration). BATON_TEST_JOBS=1 runs the
// files one after another.
import { spawn } from 'node:child_process'
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'

function findTests(dir) {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry)
    if (statSync(path).isDirectory()) return findTests(path)
    return entry.endsWith('.test.js') ? [path] : []
  })
}

const jobs = Number(process.env.BATON_TEST_JOBS ?? 3)
if (!Number.isInteger(jobs) || jobs < 1) {
  console.error(`BATON_TEST_JOBS must be a whole number of at least 1, got ${process.env.BATON_TEST_JOBS}`)
  process.exit(2)
}
const filters = process.argv.slice(2)
const files = findTests('dist/test')
  .filter((file) => filters.length === 0 || filters.some((f) => file.includes(f)))
  .sort()
if (files.length === 0) {
  console.error(`no test files match ${filters.join(' ')}`)
  process.exit(1)
}
const started = Date.now()
const runner = spawn(
  process.execPath,
  ['--test', '--test-reporter=spec', `--test-concurrency=${jobs}`, '--test-timeout=300000', ...files],
  { stdio: 'inherit' },
)
runner.on('exit', (code, signal) => {
  console.log(`${files.length} test files, ${jobs} at a time, in ${Math.round((Date.now() - started) / 1000)} s`)
  process.exit(code ?? (signal ? 1 : 0))
})

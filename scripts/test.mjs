// Runs every compiled test file (dist/test/**/*.test.js) with node's test runner.
// `npm test -- redis` runs only the files whose path contains "redis".
// Files run one at a time: fault tests freeze and kill servers, and timing on a
// 2-core machine is steadier without a second file competing for the CPU.
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

const filters = process.argv.slice(2)
const files = findTests('dist/test')
  .filter((file) => filters.length === 0 || filters.some((f) => file.includes(f)))
  .sort()
if (files.length === 0) {
  console.error(`no test files match ${filters.join(' ')}`)
  process.exit(1)
}
const runner = spawn(
  process.execPath,
  ['--test', '--test-reporter=spec', '--test-concurrency=1', '--test-timeout=300000', ...files],
  { stdio: 'inherit' },
)
runner.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)))

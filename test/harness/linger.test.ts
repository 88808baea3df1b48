/**
 * test/harness/linger.ts and scripts/file-results-reporter.mjs: a test file
 * whose process outlives its tests fails within seconds, naming what keeps it
 * alive, and the run counts it as a failed file — instead of passing every
 * test and being killed at the 300 s timeout as "0 failed".
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const LINGER = new URL('./linger.js', import.meta.url).href
const REPORTER = fileURLToPath(new URL('../../../scripts/file-results-reporter.mjs', import.meta.url))

function runFile(source: string, beside: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string; failed: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'baton-linger-'))
  const file = join(dir, 'lingers.test.mjs')
  const failedPath = join(dir, 'failed.jsonl')
  writeFileSync(file, source)
  for (const [name, text] of Object.entries(beside)) writeFileSync(join(dir, name), text)
  const child = spawn(process.execPath, [
    '--import', LINGER, '--test', '--test-reporter=spec', '--test-reporter-destination=stdout',
    `--test-reporter=${REPORTER}`, `--test-reporter-destination=${failedPath}`, file,
  ], { env: { ...process.env, BATON_TEST_LINGER_MS: '500', NODE_TEST_CONTEXT: undefined }, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (c: Buffer) => (stdout += c))
  child.stderr.on('data', (c: Buffer) => (stderr += c))
  return new Promise((resolve) => child.on('close', (code) => {
    let failed = ''
    try { failed = readFileSync(failedPath, 'utf8') } catch { /* none */ }
    rmSync(dir, { recursive: true, force: true })
    resolve({ code, stdout, stderr, failed })
  }))
}

test('a file kept alive after its tests by a forgotten interval fails at once, naming the interval and where it was made', async () => {
  const { code, stdout, stderr, failed } = await runFile([
    "import { test, after } from 'node:test'",
    "test('passes', () => {})",
    // A client whose close() forgets its keepalive interval, made while the tests ran.
    "test('leaks', () => { setInterval(function keepAliveProbe() {}, 60_000) })",
    "import { setTimeout as later } from 'node:timers'",
    // And a timer made through node:timers after the tests: named too.
    "after(() => { later(function reconnectLater() {}, 120_000) })",
  ].join('\n'))
  assert.equal(code, 1, stdout + stderr)
  const output = stdout + stderr
  assert.match(output, /lingers\.test\.mjs: still running \d+ s after its tests, kept alive by .*Timeout/)
  assert.match(output, /an interval of 60000 ms, made at .*lingers\.test\.mjs.*keepAliveProbe/)
  assert.match(output, /a timer of 120000 ms, made at .*lingers\.test\.mjs.*reconnectLater/)
  const line = JSON.parse(failed.trim()) as { file: string; passed: boolean; reason: string; lingering?: string }
  assert.match(line.file, /lingers\.test\.mjs$/)
  assert.equal(line.passed, false)
  assert.match(line.lingering ?? '', /still running/)
})

test('a file that exits when its tests are done is not touched', async () => {
  const { code, stdout, stderr, failed } = await runFile("import { test } from 'node:test'\ntest('passes', () => { setTimeout(() => {}, 100) })\n")
  assert.equal(code, 0, stdout + stderr)
  // The reporter records every file (its time feeds the run's 'slowest files'); this one as passed.
  const lines = failed.trim().split('\n').map((l) => JSON.parse(l) as { file: string; passed: boolean; reason?: string })
  assert.equal(lines.length, 1)
  assert.match(lines[0]!.file, /lingers\.test\.mjs$/)
  assert.equal(lines[0]!.passed, true)
  assert.equal(lines[0]!.reason, undefined)
})

test('a file whose test fails in a shared suite is counted as that file, not as the suite\'s module', async () => {
  const { code, failed } = await runFile("import { suite } from './suite.mjs'\nsuite()\n", {
    'suite.mjs': "import { describe, it } from 'node:test'\nexport function suite() { describe('shared', () => { it('fails', () => { throw new Error('boom') }) }) }\n",
  })
  assert.equal(code, 1)
  const lines = failed.trim().split('\n').map((l) => JSON.parse(l) as { file: string; passed: boolean; reason: string })
  assert.equal(lines.length, 1)
  assert.match(lines[0]!.file, /lingers\.test\.mjs$/)
  assert.equal(lines[0]!.passed, false)
  assert.match(lines[0]!.reason, /a test failed/)
})

/**
 * The README's TypeScript as a newcomer copies it: every ```ts block
 * type-checks (strict, ES module, nodenext) against the built library, and
 * the quick start's program runs as written against a real `baton serve`
 * and holds the lock. The identifiers a snippet leaves to the reader
 * (`chargeCard`, `work`, `signal`, …) are declared, nothing else is added.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { after, before, describe, it } from 'node:test'
import { startBatonServer, type BatonServer } from '../harness/baton-server.js'
import { ms } from '../harness/timing.js'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const run = promisify(execFile)

/** What the README's snippets use without defining: the reader's own code. */
const READER = `
import type { Baton, Lease } from 'baton'
import type { PgPoolLike, PgQueryable, RedisScriptClient } from 'baton/fencing'
declare global {
  const url: string
  const baton: Baton
  const pool: PgPoolLike & PgQueryable // a pg.Pool is both
  const redis: RedisScriptClient
  const body: string
  const signal: AbortSignal
  const order: unknown
  function chargeCard(order: unknown, options: { fencingToken: bigint; signal: AbortSignal }): Promise<void>
  function work(lease: Lease): Promise<unknown>
  function readIt(lease: Lease): Promise<void>
  function writeIt(lease: Lease): Promise<void>
  function train(lease: Lease): Promise<void>
}
export {}
`

const snippets = [...readFileSync(join(ROOT, 'README.md'), 'utf8').matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!)

let project: string
let server: BatonServer

before(async () => {
  project = mkdtempSync(join(tmpdir(), 'baton-readme-'))
  mkdirSync(join(project, 'node_modules'))
  // The project depends on the built repository, as `npm install <clone>` links it.
  symlinkSync(ROOT, join(project, 'node_modules', 'baton'), 'dir')
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'reader', private: true, type: 'module' }))
  server = await startBatonServer()
})

after(async () => {
  await server?.stop()
  if (project) rmSync(project, { recursive: true, force: true })
})

describe('README TypeScript snippets', () => {
  it('are there to check', () => {
    assert.ok(snippets.length >= 3, `found ${snippets.length} ts blocks in README.md`)
  })

  it('type-check as written in a strict ES-module project', async () => {
    const files = snippets.map((source, i) => {
      const file = `snippet-${i}.ts`
      // A block that shows calls without its import still means baton's connect.
      const imports = /from 'baton'/.test(source) ? '' : `import { connect } from 'baton'\n`
      writeFileSync(join(project, file), `${imports}${source}\nexport {}\n`)
      return file
    })
    writeFileSync(join(project, 'reader.d.ts'), READER)
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { module: 'nodenext', target: 'es2022', strict: true, noEmit: true, skipLibCheck: false, types: ['node'], typeRoots: [join(ROOT, 'node_modules/@types')] },
      files: ['reader.d.ts', ...files],
    }))
    const tsc = join(ROOT, 'node_modules/typescript/bin/tsc')
    const result = await run(process.execPath, [tsc, '-p', project], { cwd: project, timeout: ms(120_000) }).catch((error: { stdout: string }) => error)
    assert.equal(result.stdout, '', `the README's TypeScript does not compile:\n${result.stdout}`)
  })

  it("the quick start's program holds the lock on a real server and releases it", async () => {
    const quickStart = snippets.find((s) => s.includes("connect('http://127.0.0.1:7420')"))
    assert.ok(quickStart, 'the quick start connects to http://127.0.0.1:7420')
    const file = join(project, 'lock.mjs')
    // The only change: the server this test started instead of the default port.
    writeFileSync(file, quickStart.replace('http://127.0.0.1:7420', server.base))
    const { stdout } = await run(process.execPath, [file], { cwd: project, timeout: ms(30_000) })
    assert.match(stdout, /^holding with token \d+n$/m)
  })
})

/**
 * The documentation holds together: the README fits its budget, every
 * relative link of the README and docs/ points at a file of the repository,
 * nothing cites a document the repository does not hold, and CI runs exactly
 * the README's test command.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, it } from 'node:test'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8')

/** Pages other parts of the project write; linked before they land, reported (not failed) while missing. */
/** Pages linked before they were written; none now. */
const PENDING = new Set<string>()

function markdownFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((entry) => {
    const path = join(dir, entry)
    if (statSync(join(ROOT, path)).isDirectory()) return markdownFiles(path)
    return entry.endsWith('.md') ? [path] : []
  })
}

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((entry) => {
    if (['node_modules', 'dist', '.git'].includes(entry)) return []
    const path = join(dir, entry)
    if (statSync(join(ROOT, path)).isDirectory()) return sourceFiles(path)
    return /\.(ts|mjs|cjs|js|md|lua|sql|py|sh|json)$/.test(entry) && entry !== 'package-lock.json' ? [path] : []
  })
}

describe('documentation', () => {
  it('the README stays a guide: at most 400 lines', () => {
    const lines = read('README.md').split('\n').length
    assert.ok(lines <= 400, `README.md has ${lines} lines; move detail to docs/`)
  })

  it('every relative link of the README and docs/ resolves', (t) => {
    const broken: string[] = []
    for (const page of ['README.md', ...markdownFiles('docs')]) {
      for (const [, target] of read(page).matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!) || target!.startsWith('#')) continue
        const path = relative(ROOT, join(ROOT, dirname(page), target!.split('#')[0]!))
        if (existsSync(join(ROOT, path))) continue
        if (PENDING.has(path)) t.diagnostic(`${page} links ${path}, a page still to come from another part of the project`)
        else broken.push(`${page} → ${target}`)
      }
    }
    assert.deepEqual(broken, [])
  })

  it('nothing cites a design document outside the repository', () => {
    const citing = sourceFiles('.').filter((path) => !path.startsWith('test/docs/') && /DESIGN\.md/.test(read(path)))
    assert.deepEqual(citing, [])
  })

  it('CI runs exactly the README\'s test command', () => {
    assert.match(read('.ci/run'), /^npm install && npm test$/m)
    assert.ok(read('README.md').includes('npm install && npm test'))
  })
})

describe('npm start', () => {
  it('rebuilds only when a source is newer than the last build', () => {
    // A throwaway project with the real script: no build of this repository is started.
    const dir = mkdtempSync(join(tmpdir(), 'baton-stamp-'))
    mkdirSync(join(dir, 'scripts'))
    mkdirSync(join(dir, 'src'))
    mkdirSync(join(dir, 'dist'))
    copyFileSync(join(ROOT, 'scripts/build-stamp.mjs'), join(dir, 'scripts/build-stamp.mjs'))
    writeFileSync(join(dir, 'src/a.ts'), 'export {}\n')
    const stamp = (command: string) => spawnSync(process.execPath, ['scripts/build-stamp.mjs', command], { cwd: dir }).status
    assert.equal(stamp('check'), 1, 'never built: stale')
    assert.equal(stamp('write'), 0)
    assert.equal(stamp('check'), 0, 'just built: current')
    const later = new Date(Date.now() + 60_000)
    utimesSync(join(dir, 'src/a.ts'), later, later)
    assert.equal(stamp('check'), 1, 'a source changed: stale')
    rmSync(dir, { recursive: true, force: true })
  })
})

/**
 * The layers hold: read the imports of every file under src/ and check the
 * rules docs/design.md states in words. The core knows no store and nothing
 * above it; a driver knows no other driver; the lock server and the CLI reach
 * the core only through the public API or the one internal surface that says
 * why; and no file imports itself back through others (a cycle makes load
 * order decide what a module sees).
 */
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, it } from 'node:test'
import ts from 'typescript'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const SRC = join(ROOT, 'src')

/** The one module the server and the CLI may import from the core and the drivers, besides the public API. */
const INTERNAL_SURFACE = 'internal-api.ts'
const PUBLIC_API = 'index.ts'
/** The package's other public entry points (package.json "exports"): baton/fencing, baton/otel. */
const PUBLIC_SUBPATHS: readonly string[] = ['fencing/index.ts', 'otel/index.ts']
/**
 * Driver → driver imports that are the design, not a leak: Redlock is N
 * independent Redis nodes, each spoken to by the Redis driver's own scripts.
 */
/** Folders of code that several drivers share, not drivers: etcd's and ZooKeeper's line, what PostgreSQL and MySQL read alike. */
const SHARED_DRIVER_FOLDERS: readonly string[] = ['sequenced', 'sql-common']
const DRIVER_BUILDS_ON: ReadonlyArray<readonly [string, string]> = [['redlock', 'redis']]

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry)
    if (statSync(path).isDirectory()) return sourceFiles(path)
    return /\.(ts|js)$/.test(entry) && !entry.endsWith('.d.ts') ? [path] : []
  })
}

/** `a/b.ts` paths relative to src/, with forward slashes on every platform. */
const name = (path: string) => relative(SRC, path).split(sep).join('/')

/** The src/ file a relative specifier names (`./x.js` is compiled from `./x.ts`), or undefined for packages and node: modules. */
function resolve(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined
  const target = join(dirname(from), specifier)
  for (const candidate of [target.replace(/\.js$/, '.ts'), target, `${target}.ts`, join(target, 'index.ts')]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate
  }
  // A declaration-only module (e.g. a package's missing types) is not a source file.
  if (existsSync(target.replace(/\.js$/, '.d.ts'))) return undefined
  throw new Error(`${name(from)} imports '${specifier}', which is no file under src/`)
}

/** Every file → the src/ files it imports (static, type-only, re-exports and dynamic import() alike). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>()
  for (const path of sourceFiles(SRC)) {
    const info = ts.preProcessFile(readFileSync(path, 'utf8'), true, true)
    const targets = info.importedFiles.map((file) => resolve(path, file.fileName)).filter((target) => target !== undefined)
    graph.set(name(path), [...new Set(targets.map(name))])
  }
  return graph
}

/** One cycle per strongly connected component (Tarjan), each written as a → b → … → a. */
function cycles(graph: Map<string, string[]>): string[] {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const found: string[] = []
  let next = 0
  const visit = (node: string): void => {
    index.set(node, next)
    low.set(node, next++)
    stack.push(node)
    onStack.add(node)
    for (const target of graph.get(node) ?? []) {
      if (!index.has(target)) {
        visit(target)
        low.set(node, Math.min(low.get(node)!, low.get(target)!))
      } else if (onStack.has(target)) {
        low.set(node, Math.min(low.get(node)!, index.get(target)!))
      }
    }
    if (low.get(node) !== index.get(node)) return
    const component = new Set<string>()
    let member: string
    do {
      member = stack.pop()!
      onStack.delete(member)
      component.add(member)
    } while (member !== node)
    if (component.size > 1 || (graph.get(node) ?? []).includes(node)) found.push(cycleThrough(graph, node, component))
  }
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node)
  return found
}

/** A shortest path from start back to itself inside its component, to name the cycle one can break. */
function cycleThrough(graph: Map<string, string[]>, start: string, component: Set<string>): string {
  const cameFrom = new Map<string, string>()
  const queue = [start]
  while (queue.length > 0) {
    const node = queue.shift()!
    for (const target of graph.get(node) ?? []) {
      if (!component.has(target)) continue
      if (target === start) {
        const path = [start]
        for (let at: string | undefined = node; at !== undefined && at !== start; at = cameFrom.get(at)) path.unshift(at)
        path.unshift(start)
        return path.join(' → ')
      }
      if (!cameFrom.has(target)) {
        cameFrom.set(target, node)
        queue.push(target)
      }
    }
  }
  return start
}

const driverOf = (file: string) => /^drivers\/([^/]+)\//.exec(file)?.[1]

const graph = importGraph()
const edges = [...graph].flatMap(([from, targets]) => targets.map((to) => ({ from, to })))
const show = (bad: Array<{ from: string; to: string }>) => bad.map(({ from, to }) => `${from} → ${to}`).join('\n')

describe('layers', () => {
  it('finds the files and their imports', () => {
    // Guards the test itself: a wrong root or parser would make every rule pass vacuously.
    assert.ok(graph.has('core/driver.ts') && graph.has('server/index.ts') && graph.has('cli/main.ts'))
    assert.ok(graph.get('index.ts')!.includes('core/errors.ts'))
    assert.ok(graph.has(INTERNAL_SURFACE), `${INTERNAL_SURFACE} exists`)
  })

  it('the lock server and the CLI use the library only through the public API or the internal surface', () => {
    // Their own folders and the bench tool (`baton bench`) are theirs; the library below them only through the two named files.
    // The CLI's `verify` also runs the chaos checker (src/chaos/, itself a client of the library), which it shares with the chaos suite.
    const theirs = (from: string, to: string) => /^(server|cli|bench)\//.test(to) || (from.startsWith('cli/') && to.startsWith('chaos/')) ||
      to === PUBLIC_API || PUBLIC_SUBPATHS.includes(to) || to === INTERNAL_SURFACE
    const bad = edges.filter(({ from, to }) => /^(server|cli)\//.test(from) && !theirs(from, to))
    assert.equal(show(bad), '', 'imports past the named surfaces')
    assert.ok(edges.some(({ from, to }) => from.startsWith('server/') && to === INTERNAL_SURFACE))
    assert.ok(edges.some(({ from, to }) => from.startsWith('cli/') && (to === INTERNAL_SURFACE || to === PUBLIC_API)))
  })

  it('the internal surface is for the server and the CLI only', () => {
    const bad = edges.filter(({ from, to }) => to === INTERNAL_SURFACE && !/^(server|cli)\//.test(from))
    assert.equal(show(bad), '')
  })

  it('the core imports nothing outside the core', () => {
    const bad = edges.filter(({ from, to }) => from.startsWith('core/') && !to.startsWith('core/'))
    assert.equal(show(bad), '')
  })

  it('the internal surface re-exports the library, never the server or the CLI', () => {
    const bad = edges.filter(({ from, to }) => from === INTERNAL_SURFACE && !/^(core|drivers|primitives)\//.test(to))
    assert.equal(show(bad), '')
  })

  it('no driver imports another driver, except the shared folders (sequenced/, sql-common/) and the registry', () => {
    const bad = edges.filter(({ from, to }) => {
      const own = driverOf(from)
      const other = driverOf(to)
      if (own === undefined || other === undefined || own === other || SHARED_DRIVER_FOLDERS.includes(other)) return false
      return !DRIVER_BUILDS_ON.some(([user, base]) => user === own && base === other)
    })
    assert.equal(show(bad), '')
  })

  it('no import cycle anywhere in src/', () => {
    assert.deepEqual(cycles(graph), [])
  })
})

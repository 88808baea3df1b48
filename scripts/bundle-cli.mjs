// Builds the `baton` command the package ships (dist/cli/), for a quick start
// (README, Command line; bench/scenarios/cli-startup.ts measures it):
//
// - cli.js: one CommonJS bundle of dist/src/cli/main.js, its commands, the core
//   and ioredis. Node reads one file instead of about a hundred modules, and
//   no ES module loader starts. Other store clients and the server's packages
//   stay external, loaded only when their command or store URL asks for them;
//   the commands and drivers inside run their module code only when first used.
// - baton.js: the bin (scripts/cli-bin.cjs), which runs the bundle with a V8
//   code cache, so a `baton run` skips compiling most of what it calls.
import { createHash } from 'node:crypto'
import { chmodSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { build } from 'esbuild'

const OUT_DIR = 'dist/cli'
const BUNDLE = `${OUT_DIR}/cli.js`
const BUNDLED_PACKAGES = new Set(['ioredis', 'cluster-key-slot'])
const pkg = JSON.parse(readFileSync('package.json', 'utf8'))
const external = Object.keys(pkg.dependencies ?? {}).filter((name) => !BUNDLED_PACKAGES.has(name))

/** Replaces `from` by `to` in a module's source, or fails the build when `from` is not there. */
function patched(path, source, from, to) {
  if (!source.includes(from)) {
    throw new Error(`${path} changed: "${from}" is not in it; update or drop this patch in scripts/bundle-cli.mjs`)
  }
  return source.replace(from, to)
}

const rewrites = {
  name: 'baton-cli-rewrites',
  setup(build) {
    // The Redis driver's Lua scripts travel inside the bundle: connecting reads
    // about 25 files otherwise (src/drivers/redis/lua-source.ts).
    build.onLoad({ filter: /dist\/src\/drivers\/redis\/lua-source\.js$/ }, (args) => {
      const dir = join(dirname(args.path), 'scripts')
      const sources = Object.fromEntries(readdirSync(dir).filter((f) => f.endsWith('.lua')).map((f) => [f.slice(0, -4), readFileSync(join(dir, f), 'utf8')]))
      const fromBundle = relative(OUT_DIR, args.path)
      return {
        contents: `const SOURCES = ${JSON.stringify(sources)}
export function scriptPath(file) {
  return new URL(\`./scripts/\${file}.lua\`, new URL(${JSON.stringify(fromBundle)}, __batonBundleUrl))
}
export function luaSource(file) {
  if (!Object.hasOwn(SOURCES, file)) throw new Error(\`no Lua script "\${file}" in the bundle (\${scriptPath(file).pathname})\`)
  return SOURCES[file]
}`,
        loader: 'js',
      }
    })
    // Files load their assets relative to themselves (Lua and SQL scripts, the
    // dashboard's files): give each module its own import.meta.url, as a path
    // relative to the bundle, so dist/ can move as a whole.
    build.onLoad({ filter: /dist\/src\/.*\.js$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8')
      if (!source.includes('import.meta.url')) return undefined
      const fromBundle = relative(OUT_DIR, args.path)
      return { contents: source.replaceAll('import.meta.url', `new URL(${JSON.stringify(fromBundle)}, __batonBundleUrl).href`), loader: 'js' }
    })
    // ioredis adds its ~570 command methods one by one to Commander.prototype
    // while that object is still in V8's fast mode, where each addition copies
    // every property added before: ~10 ms of a start-up. An object that had a
    // property deleted is in dictionary mode, where an addition is O(1).
    build.onLoad({ filter: /ioredis\/built\/utils\/Commander\.js$/ }, (args) => {
      const from = 'commands.forEach(function (commandName) {'
      const to = `Commander.prototype.__batonDictionaryMode = 0;\ndelete Commander.prototype.__batonDictionaryMode;\n${from}`
      return { contents: patched(args.path, readFileSync(args.path, 'utf8'), from, to), loader: 'js' }
    })
    // ioredis loads its Cluster client (and with it `dns`) with the
    // standalone one, which needs it only as the static Redis.Cluster: load
    // it when first asked for (a redis+cluster:// store), not at start.
    const lazyCluster = 'cluster_1 = { get default() { return require("./cluster").default; } };'
    build.onLoad({ filter: /ioredis\/built\/Redis\.js$/ }, (args) => {
      let source = readFileSync(args.path, 'utf8')
      source = patched(args.path, source, 'const cluster_1 = require("./cluster");', `const ${lazyCluster}`)
      source = patched(args.path, source, 'Redis.Cluster = cluster_1.default;',
        'Object.defineProperty(Redis, "Cluster", { get: () => cluster_1.default, configurable: true, enumerable: true });')
      return { contents: source, loader: 'js' }
    })
    build.onLoad({ filter: /ioredis\/built\/index\.js$/ }, (args) => ({
      contents: patched(args.path, readFileSync(args.path, 'utf8'), 'var cluster_1 = require("./cluster");', `var ${lazyCluster}`),
      loader: 'js',
    }))
    // Node modules the bundled packages require at load time but use only
    // later, if ever: `tls` (ioredis, for rediss:// only) and `assert`
    // (redis-errors, when a reply fails to parse). Each costs about 1 ms to
    // load; they load on first use instead. Their callers only call them or
    // read properties, which the stand-in passes on.
    build.onResolve({ filter: /^(tls|assert)$/ }, (args) => (
      /node_modules/.test(args.importer) ? { path: args.path, namespace: 'lazy-node-module' } : undefined
    ))
    build.onLoad({ filter: /.*/, namespace: 'lazy-node-module' }, (args) => ({
      contents: `let loaded
const load = () => (loaded ??= require('node:${args.path}'))
module.exports = new Proxy(function () {}, {
  get: (_, key) => load()[key],
  apply: (_, self, args) => Reflect.apply(load(), self, args),
})`,
      loader: 'js',
    }))
    // On its first connection ioredis reads its package.json (relative to the
    // module, so the wrong file once bundled) with fs.promises, which loads a
    // dozen modules, for the version it reports in CLIENT SETINFO: give it the version.
    build.onLoad({ filter: /ioredis\/built\/utils\/index\.js$/ }, (args) => {
      const { version } = JSON.parse(readFileSync('node_modules/ioredis/package.json', 'utf8'))
      const from = 'await fs_1.promises.readFile(filePath, "utf8")'
      return { contents: patched(args.path, readFileSync(args.path, 'utf8'), from, JSON.stringify(JSON.stringify({ version }))), loader: 'js' }
    })
  },
}

rmSync(OUT_DIR, { recursive: true, force: true })

await build({
  entryPoints: { cli: 'dist/src/cli/main.js' },
  outdir: OUT_DIR,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  external,
  plugins: [rewrites],
  banner: { js: "const __batonBundleUrl = require('node:url').pathToFileURL(__filename).href;" },
  // Less source to read and hash; names stay, so stack traces still read.
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: 'none',
  logLevel: 'warning',
})

// dist/cli is CommonJS (the rest of the package is ESM).
writeFileSync(`${OUT_DIR}/package.json`, `${JSON.stringify({ type: 'commonjs' })}\n`)
const hash = createHash('sha256').update(readFileSync(BUNDLE)).digest('hex').slice(0, 16)
writeFileSync(`${OUT_DIR}/baton.js`, readFileSync('scripts/cli-bin.cjs', 'utf8').replace('__BUNDLE_HASH__', hash))
chmodSync(`${OUT_DIR}/baton.js`, 0o755)


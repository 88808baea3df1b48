// Builds the `baton` command the package ships (dist/cli/), for a quick start
// (docs/benchmarks.md, "Command line start-up"; bench/scenarios/cli-startup.ts
// measures it) and so that `npx baton serve` needs nothing but the package: the
// library's store clients are optional peer dependencies and the server's
// packages are not dependencies at all (docs/install.md), so the command
// carries its own.
//
// - cli.js: one CommonJS bundle of dist/src/cli/main.js, its commands, the
//   server, the core and ioredis. Node reads one file instead of about a
//   hundred modules, and no ES module loader starts. The commands and drivers
//   inside run their module code only when first used.
// - vendor/*.js.br: the other packages, one bundle per group that loads
//   together (the server's, each store client's), brotli-compressed, loaded by
//   cli.js only when `serve` or a store URL asks for them, so a `baton run` on
//   Redis never reads them; vendor/uplot/ and vendor/etcd3/proto/: the files
//   they read at run time. THIRD-PARTY-LICENSES.txt: what is bundled.
// - baton.js: the bin (scripts/cli-bin.cjs), which runs the bundle with a V8
//   code cache, so a `baton run` skips compiling most of what it calls.
import { createHash } from 'node:crypto'
import { isBuiltin } from 'node:module'
import { chmodSync, cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { brotliCompressSync, constants as zlib } from 'node:zlib'
import { build } from 'esbuild'

const OUT_DIR = 'dist/cli'
const BUNDLE = `${OUT_DIR}/cli.js`
const VENDOR_DIR = `${OUT_DIR}/vendor`
/** Bundled into cli.js: the short commands' store client. */
const BUNDLED_PACKAGES = new Set(['ioredis', 'cluster-key-slot'])
/** vendor/<file>.js → the packages it carries, together because they load together. */
const VENDOR_GROUPS = {
  server: ['fastify', '@fastify/swagger', 'prom-client'],
  pg: ['pg'],
  mysql: ['mysql2'],
  zookeeper: ['node-zookeeper-client'],
  etcd: ['etcd3', 'cockatiel'],
  // The optional peer of baton/otel (src/otel), and the SDK `baton serve` exports its
  // traces with when OTEL_* asks for them (src/server/tracing.ts): loaded only then.
  otel: [
    '@opentelemetry/api', '@opentelemetry/sdk-trace-base', '@opentelemetry/exporter-trace-otlp-http',
    '@opentelemetry/resources', '@opentelemetry/core', '@opentelemetry/context-async-hooks',
  ],
}
const vendorFileOf = new Map(Object.entries(VENDOR_GROUPS).flatMap(([file, names]) => names.map((name) => [name, file])))
const pkg = JSON.parse(readFileSync('package.json', 'utf8'))
const imported = [...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.peerDependencies ?? {})]
const unplaced = imported.filter((name) => !BUNDLED_PACKAGES.has(name) && !vendorFileOf.has(name))
if (unplaced.length > 0) {
  throw new Error(`scripts/bundle-cli.mjs: place ${unplaced.join(', ')} in BUNDLED_PACKAGES or VENDOR_GROUPS, or \`npx baton\` will not find it`)
}

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
      let source = readFileSync(args.path, 'utf8')
      // uPlot's files ship in vendor/uplot/ (copied below), not node_modules.
      if (args.path.endsWith('dist/src/server/dashboard/index.js')) {
        source = patched(args.path, source, "createRequire(import.meta.url).resolve('uplot/package.json')",
          "require('node:url').fileURLToPath(new URL('./vendor/uplot/package.json', __batonBundleUrl))")
      }
      if (!source.includes('import.meta.url')) return { contents: source, loader: 'js' }
      const fromBundle = relative(OUT_DIR, args.path)
      return { contents: source.replaceAll('import.meta.url', `new URL(${JSON.stringify(fromBundle)}, __batonBundleUrl).href`), loader: 'js' }
    })
    // The other packages: from their vendor/ bundle, when first required.
    build.onResolve({ filter: /^[@a-z]/ }, (args) => {
      if (args.namespace !== 'file' || /node_modules/.test(args.importer) || args.path.startsWith('node:') || isBuiltin(args.path)) return undefined
      if (vendorFileOf.has(args.path)) return { path: args.path, namespace: 'vendored' }
      const name = args.path.match(/^(?:@[^/]+\/)?[^/]+/)[0]
      if (BUNDLED_PACKAGES.has(name)) return undefined
      // Else it would land in cli.js, read by every `baton run`.
      return { errors: [{ text: `${args.importer} imports "${args.path}": place it in BUNDLED_PACKAGES or VENDOR_GROUPS in scripts/bundle-cli.mjs` }] }
    })
    build.onLoad({ filter: /.*/, namespace: 'vendored' }, (args) => ({
      contents: `module.exports = require("vendor-loader")(${JSON.stringify(vendorFileOf.get(args.path))})[${JSON.stringify(args.path)}]`,
      loader: 'js',
    }))
    build.onResolve({ filter: /^vendor-loader$/, namespace: 'vendored' }, () => ({ path: 'vendor-loader', namespace: 'vendored-loader' }))
    // The vendor bundles ship brotli-compressed (a fifth of their size; a few
    // ms to inflate), and run as the bin runs cli.js (scripts/cli-bin.cjs):
    // as CommonJS modules named vendor/<file>.js, whose __dirname is vendor/.
    build.onLoad({ filter: /.*/, namespace: 'vendored-loader' }, () => ({
      contents: `const { readFileSync } = require('node:fs')
const Module = require('node:module')
const { join } = require('node:path')
const { Script } = require('node:vm')
const { brotliDecompressSync } = require('node:zlib')
const loaded = new Map()
module.exports = function vendor(file) {
  if (!loaded.has(file)) {
    const dir = join(__dirname, 'vendor')
    const filename = join(dir, file + '.js')
    const source = brotliDecompressSync(readFileSync(filename + '.br')).toString('utf8')
    const vendored = { exports: {} }
    new Script(Module.wrap(source), { filename }).runInThisContext()(vendored.exports, Module.createRequire(filename), vendored, filename, dir)
    loaded.set(file, vendored.exports)
  }
  return loaded.get(file)
}`,
      loader: 'js',
    }))
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
  },
}

const vendorEntries = {
  name: 'baton-vendor-entries',
  setup(build) {
    build.onResolve({ filter: /^vendor:/ }, (args) => ({ path: args.path.slice('vendor:'.length), namespace: 'vendor-entry' }))
    build.onLoad({ filter: /.*/, namespace: 'vendor-entry' }, (args) => ({
      contents: `module.exports = {${VENDOR_GROUPS[args.path].map((name) => `${JSON.stringify(name)}: require(${JSON.stringify(name)})`).join(', ')}}`,
      resolveDir: process.cwd(),
      loader: 'js',
    }))
    // etcd3 reads its gRPC definitions beside its code; they are copied to vendor/etcd3/proto/.
    build.onLoad({ filter: /etcd3\/lib\/connection-pool\.js$/ }, (args) => ({
      contents: patched(args.path, readFileSync(args.path, 'utf8'), '`${__dirname}/../proto/rpc.proto`', '`${__dirname}/etcd3/proto/rpc.proto`'),
      loader: 'js',
    }))
  },
}

const common = {
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  // Less source to read and hash; names stay, so stack traces still read.
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: 'none',
  logLevel: 'warning',
  metafile: true,
}

rmSync(OUT_DIR, { recursive: true, force: true })

const cliBuild = await build({
  ...common,
  entryPoints: { cli: 'dist/src/cli/main.js' },
  outdir: OUT_DIR,
  plugins: [rewrites],
  banner: { js: "const __batonBundleUrl = require('node:url').pathToFileURL(__filename).href;" },
})

const vendorBuild = await build({
  ...common,
  entryPoints: Object.fromEntries(Object.keys(VENDOR_GROUPS).map((file) => [file, `vendor:${file}`])),
  outdir: VENDOR_DIR,
  write: false,
  // pg's optional native binding: pg falls back to its JavaScript client without it.
  external: ['pg-native'],
  // The bundles run in a vm Script, which has no dynamic import(): made require()s (the
  // OTLP exporter imports node:http so when it first sends).
  supported: { 'dynamic-import': false },
  plugins: [vendorEntries],
})
for (const { path, contents } of vendorBuild.outputFiles) {
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(`${path}.br`, brotliCompressSync(contents, { params: { [zlib.BROTLI_PARAM_QUALITY]: 9, [zlib.BROTLI_PARAM_SIZE_HINT]: contents.length } }))
}
const packageDir = (name) => join('node_modules', name)
mkdirSync(`${VENDOR_DIR}/uplot/dist`, { recursive: true })
for (const file of ['dist/uPlot.iife.min.js', 'dist/uPlot.min.css', 'LICENSE']) cpSync(join(packageDir('uplot'), file), join(VENDOR_DIR, 'uplot', file))
writeFileSync(`${VENDOR_DIR}/uplot/package.json`, `${JSON.stringify({ name: 'uplot', version: JSON.parse(readFileSync(join(packageDir('uplot'), 'package.json'), 'utf8')).version })}\n`)
cpSync(join(packageDir('etcd3'), 'proto'), `${VENDOR_DIR}/etcd3/proto`, { recursive: true })

// The bundles drop the packages' license comments: their notices travel in one file.
const bundledPackageDirs = new Set([cliBuild, vendorBuild].flatMap((result) => Object.keys(result.metafile.inputs))
  .map((input) => /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input)?.[1]).filter(Boolean))
bundledPackageDirs.add(packageDir('uplot'))
const notices = [...bundledPackageDirs].sort().map((dir) => {
  const { name, version, license } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))
  const licenseFile = readdirSync(dir).find((file) => /^(licen[cs]e|copying)/i.test(file))
  const text = licenseFile ? readFileSync(join(dir, licenseFile), 'utf8').trim() : `${license} (no license file in the package)`
  return `${name}@${version} (${license})\n\n${text}\n`
})
writeFileSync(`${OUT_DIR}/THIRD-PARTY-LICENSES.txt`, `Packages bundled in dist/cli/ and their licenses.\n\n${notices.join(`\n${'-'.repeat(72)}\n\n`)}`)

// dist/cli is CommonJS (the rest of the package is ESM).
writeFileSync(`${OUT_DIR}/package.json`, `${JSON.stringify({ type: 'commonjs' })}\n`)
const hash = createHash('sha256').update(readFileSync(BUNDLE)).digest('hex').slice(0, 16)
writeFileSync(`${OUT_DIR}/baton.js`, readFileSync('scripts/cli-bin.cjs', 'utf8').replace('__BUNDLE_HASH__', hash))
chmodSync(`${OUT_DIR}/baton.js`, 0o755)


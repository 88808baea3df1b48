// Bundles the `baton` command (dist/src/cli/bin.js, its commands, the core and
// ioredis) into dist/cli/baton.js, the package's bin, plus one chunk per lazily
// imported part (each command, each store driver): Node then reads and links a
// few modules instead of about a hundred, which is most of the difference
// between `baton run` and a bare `node -e 0` (see README, Command line). Other
// store clients and the server's packages stay external, loaded only when their
// command or store URL asks for them.
import { readFileSync, rmSync } from 'node:fs'
import { relative } from 'node:path'
import { build } from 'esbuild'

const OUT_DIR = 'dist/cli'
const BUNDLED_PACKAGES = new Set(['ioredis'])
const pkg = JSON.parse(readFileSync('package.json', 'utf8'))
const external = Object.keys(pkg.dependencies ?? {}).filter((name) => !BUNDLED_PACKAGES.has(name))

// Files load their assets relative to themselves (Lua and SQL scripts, the
// dashboard's files): give each module its own import.meta.url, as a path
// relative to the bundle, so dist/ can move as a whole.
const ownImportMetaUrl = {
  name: 'own-import-meta-url',
  setup(build) {
    build.onLoad({ filter: /dist\/src\/.*\.js$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8')
      if (!source.includes('import.meta.url')) return undefined
      const fromBundle = relative(OUT_DIR, args.path)
      return { contents: source.replaceAll('import.meta.url', `new URL(${JSON.stringify(fromBundle)}, import.meta.url).href`), loader: 'js' }
    })
  },
}

// Chunk names carry a hash: start clean so no stale chunk is left beside the new ones.
rmSync(OUT_DIR, { recursive: true, force: true })

await build({
  entryPoints: { baton: 'dist/src/cli/bin.js' },
  outdir: OUT_DIR,
  bundle: true,
  splitting: true,
  chunkNames: '[name]-[hash]',
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external,
  plugins: [ownImportMetaUrl],
  // ioredis is CommonJS: give its require() of Node's modules a real require.
  banner: { js: "import { createRequire as __batonCreateRequire } from 'node:module'; const require = __batonCreateRequire(import.meta.url);" },
  legalComments: 'none',
  logLevel: 'warning',
})

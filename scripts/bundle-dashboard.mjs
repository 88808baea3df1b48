// Builds the dashboard's script: the page's modules (src/server/dashboard/page/,
// one per view: the locks table, the chart, the events list, filter and sort,
// force release, and the state and API calls they share) bundled into one file,
// dist/src/server/dashboard/app.js, which the server serves as /dashboard/app.js
// (src/server/dashboard/index.ts). One file, so the page makes one request for
// its code and the package ships no sources it does not run.
//
// The modules are plain ES modules in JavaScript, written for the browser:
// tsc does not see them (the project's types are Node's, not the DOM's).
import { build } from 'esbuild'

await build({
  entryPoints: ['src/server/dashboard/page/main.js'],
  outfile: 'dist/src/server/dashboard/app.js',
  bundle: true,
  // Loaded by <script type="module">: strict and deferred, as the modules were written.
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  // Not minified: a small file, and an operator can read it in the browser's tools.
  legalComments: 'none',
  logLevel: 'warning',
})

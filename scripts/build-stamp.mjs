// `npm start` should not spend 15 s rebuilding a build that is current.
//
//   node scripts/build-stamp.mjs write   after a build: records that dist/ matches the sources
//   node scripts/build-stamp.mjs build   runs `npm run build` unless dist/ is current
//   node scripts/build-stamp.mjs check   exits 0 if dist/ is current, 1 if not
//
// "Current" means the stamp is newer than every file the build reads (src/,
// test/, bench/, scripts/, tsconfig.json, package.json, package-lock.json).
// Modification times are enough here: a checkout or an edit touches them, and
// a wrong "stale" only costs one build.
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const STAMP = 'dist/.build-stamp'
const INPUTS = ['src', 'test', 'bench', 'scripts', 'tsconfig.json', 'package.json', 'package-lock.json']

function newestMtime(path) {
  if (!existsSync(path)) return 0
  const stat = statSync(path)
  if (!stat.isDirectory()) return stat.mtimeMs
  return readdirSync(path).reduce((newest, entry) => Math.max(newest, newestMtime(join(path, entry))), stat.mtimeMs)
}

const current = () => {
  const stamp = existsSync(STAMP) ? statSync(STAMP).mtimeMs : 0
  return stamp > 0 && stamp >= Math.max(...INPUTS.map(newestMtime))
}

const command = process.argv[2]
if (command === 'check') {
  process.exit(current() ? 0 : 1)
} else if (command === 'write') {
  writeFileSync(STAMP, `${new Date().toISOString()}\n`)
} else if (command === 'build') {
  if (current()) {
    console.log('baton: dist/ is up to date with the sources; not rebuilding (npm run build forces it)')
  } else {
    const npm = process.env.npm_execpath
    const result = npm
      ? spawnSync(process.execPath, [npm, 'run', 'build'], { stdio: 'inherit' })
      : spawnSync('npm', ['run', 'build'], { stdio: 'inherit', shell: process.platform === 'win32' })
    process.exit(result.status ?? 1)
  }
} else {
  console.error('usage: node scripts/build-stamp.mjs write|build|check')
  process.exit(2)
}

// tsc does not copy non-TS sources; the Lua and SQL scripts and the dashboard's
// page and styles are loaded at run time relative to the compiled module, so
// mirror them into dist/. The dashboard's script is not copied but bundled from
// its modules (scripts/bundle-dashboard.mjs).
import { cpSync, readdirSync, statSync, mkdirSync } from 'node:fs'
import { join, dirname, extname } from 'node:path'

const ASSET_EXTENSIONS = new Set(['.lua', '.sql', '.html', '.css'])
function copyAssets(fromDir, toDir) {
  for (const entry of readdirSync(fromDir)) {
    const from = join(fromDir, entry)
    const to = join(toDir, entry)
    if (statSync(from).isDirectory()) copyAssets(from, to)
    else if (ASSET_EXTENSIONS.has(extname(entry))) {
      mkdirSync(dirname(to), { recursive: true })
      cpSync(from, to)
    }
  }
}
copyAssets('src', 'dist/src')

import { readFileSync } from 'node:fs'

/**
 * Where the driver's Lua scripts are read from: ./scripts/<file>.lua beside
 * this module. The `baton` command's bundle replaces this module with one that
 * holds every script's text (scripts/bundle-cli.mjs), so a short command reads
 * no script file at start-up.
 */
export function scriptPath(file: string): URL {
  return new URL(`./scripts/${file}.lua`, import.meta.url)
}

/** The text of ./scripts/<file>.lua, as written (includes not expanded). */
export function luaSource(file: string): string {
  return readFileSync(scriptPath(file), 'utf8')
}

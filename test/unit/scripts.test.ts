/**
 * The Lua scripts' contract headers must match how scripts.ts calls them:
 * the highest KEYS[n] a header documents is the script's numberOfKeys, and
 * every KEYS / ARGV index the code uses is documented.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { loadScript, NODE_SCRIPTS, SCRIPTS, scriptPath } from '../../src/drivers/redis/scripts.js'

function indexes(text: string, array: 'KEYS' | 'ARGV'): Set<number> {
  return new Set([...text.matchAll(new RegExp(`${array}\\[(\\d+)\\]`, 'g'))].map((m) => Number(m[1])))
}

describe('redis script headers', () => {
  for (const [name, spec] of [...Object.entries(SCRIPTS), ...Object.entries(NODE_SCRIPTS)]) {
    it(`${spec.file}.lua matches its declaration`, () => {
      const file = readFileSync(scriptPath(spec.file), 'utf8')
      // A node script's first line is its shebang (Redis >= 7 flags); batch.lua compiles the others in, so they have none.
      const shebang = /^#!lua[^\n]*\n/.exec(file)?.[0] ?? ''
      assert.equal(shebang !== '', name in NODE_SCRIPTS, `${name}: a shebang line exactly on node scripts`)
      const source = file.slice(shebang.length)
      const header = /^--\[\[([\s\S]*?)\]\]/.exec(source)?.[1]
      assert.ok(header, `${spec.file}.lua starts with a --[[ contract header ]]`)
      const body = source.slice(source.indexOf(']]') + 2)
      const declaredKeys = indexes(header, 'KEYS')
      assert.equal(Math.max(0, ...declaredKeys), spec.numberOfKeys, `${name}: numberOfKeys vs header`)
      for (const used of indexes(body, 'KEYS')) assert.ok(declaredKeys.has(used), `${name}: KEYS[${used}] undocumented`)
      for (const used of indexes(body, 'ARGV')) assert.ok(indexes(header, 'ARGV').has(used), `${name}: ARGV[${used}] undocumented`)
      assert.doesNotMatch(loadScript(spec.file), /@include/, 'includes are expanded')
    })
  }
})

/** etcd list(): which names key order may put after a name read, and which keys belong to a line. */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { compareNames } from '../../src/core/list.js'
import { nameOfKey, prefixesKeyOrderMayDelay } from '../../src/drivers/etcd/pages.js'

/** A name's first key as etcd sorts it: `<name>/<lease hex>.<id>`. */
const keyOf = (name: string, lease = '694d1b2c3d4e5f60') => Buffer.from(`${name}/${lease}.x`)

describe('etcd pages', () => {
  it('names the prefixes followed by a byte up to "/", at least the list prefix long', () => {
    assert.deepEqual(prefixesKeyOrderMayDelay('a-b.c/d', 0), ['a', 'a-b', 'a-b.c'])
    assert.deepEqual(prefixesKeyOrderMayDelay('jobs/a-1', 5), ['jobs/a'])
    assert.deepEqual(prefixesKeyOrderMayDelay('abc', 0), [])
    assert.deepEqual(prefixesKeyOrderMayDelay('é-x', 0), ['é'])
  })

  it('every name that sorts before another but has its keys after it is one of those prefixes', () => {
    const names = ['a', 'a b', 'a!', 'a-b', 'a.b', 'a/', 'a/0', 'a/0/1', 'a/-', 'a/b', 'a/z', 'ab', 'é', '\uff71', '\u{1f600}']
    for (const lease of ['0', '694d1b2c3d4e5f60', 'ffff']) {
      for (const x of names) {
        for (const y of names) {
          const outOfPlace = compareNames(x, y) < 0 && Buffer.compare(keyOf(x, lease), keyOf(y, lease)) > 0
          if (outOfPlace) assert.ok(prefixesKeyOrderMayDelay(y, 0).includes(x), `${x} before ${y} (lease ${lease})`)
        }
      }
    }
  })

  it('knows a line entry from a deeper name\'s key and from keys of no line', () => {
    assert.equal(nameOfKey('jobs/7/694d1b2c3d4e5f60.c1-x_y'), 'jobs/7')
    assert.equal(nameOfKey('jobs/694d1b2c3d4e5f60'), 'jobs')
    assert.equal(nameOfKey('jobs/not-an-entry'), undefined)
    assert.equal(nameOfKey('/694d'), undefined)
  })
})

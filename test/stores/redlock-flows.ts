/**
 * A separate OS process for the Redlock contention test: `flows` flows of
 * one client take one name in turn for `seconds`, appending "+<token> <id>"
 * on entering and "-" on leaving to a shared log (O_APPEND writes, so the
 * log is the order of events across processes), then print "done <grants per flow…>".
 */
import { appendFileSync } from 'node:fs'
import { connect } from '../../src/index.js'

const { url, name, file, flows, seconds, id } = JSON.parse(process.argv[2]!) as {
  url: string; name: string; file: string; flows: number; seconds: number; id: string
}
const baton = await connect(url)
const lock = baton.mutex(name, { ttl: '5s' })
const stopAt = Date.now() + seconds * 1000
const grants = await Promise.all(Array.from({ length: flows }, async (_, flow) => {
  let n = 0
  while (Date.now() < stopAt) {
    await lock.using(async (lease) => {
      appendFileSync(file, `+${lease.token} ${id}${flow}\n`)
      await new Promise((resolve) => setImmediate(resolve))
      appendFileSync(file, '-\n')
      n += 1
    })
  }
  return n
}))
console.log(`done ${grants.join(' ')}`)
await baton.close()

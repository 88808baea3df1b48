/**
 * A separate OS process for cross-process conformance tests. Prints progress
 * lines on stdout for the parent: "held <token>", "waiting", "granted <token>",
 * "done <n>".
 */
import { appendFile, readFile, writeFile } from 'node:fs/promises'
import { createInterface } from 'node:readline'
import diagnostics_channel from 'node:diagnostics_channel'
import { connect } from '../../src/index.js'
import { unhurried } from '../harness/clients.js'
import type { WorkerTask } from './context.js'
import { holdAll, LOOKS, renewAll } from './lapse.js'

const task = JSON.parse(process.argv[2]!) as WorkerTask & { url: string }
const baton = await connect(task.url, unhurried())

switch (task.task) {
  case 'counter': {
    const lock = baton.mutex(task.name, { ttl: task.ttl })
    for (let i = 0; i < task.iterations; i++) {
      await lock.using(async () => {
        const value = Number(await readFile(task.file, 'utf8'))
        await new Promise((r) => setImmediate(r))
        await writeFile(task.file, String(value + 1))
      })
    }
    console.log(`done ${task.iterations}`)
    await baton.close()
    break
  }
  case 'hold': {
    const lock =
      task.kind === 'semaphore'
        ? baton.semaphore(task.name, { permits: task.permits ?? 1, ttl: task.ttl })
        : baton.mutex(task.name, { ttl: task.ttl, fair: task.fair ?? false })
    const lease = task.kind === 'semaphore' && task.weight !== undefined
      ? await baton.semaphore(task.name, { permits: task.permits ?? 1, ttl: task.ttl }).acquire({ autoExtend: true, weight: task.weight })
      : await lock.acquire({ autoExtend: true })
    console.log(`held ${lease.token}`)
    await new Promise(() => {}) // until killed
    break
  }
  case 'queue': {
    const lock = baton.mutex(task.name, { ttl: task.ttl, fair: true })
    createInterface({ input: process.stdin }).on('line', (line) => {
      const [command, id] = line.split(' ')
      if (command !== 'wait') return
      const onWait = () => {
        diagnostics_channel.unsubscribe('baton:wait', onWait)
        console.log(`waiting ${id}`)
      }
      diagnostics_channel.subscribe('baton:wait', onWait)
      void lock.using(async (lease) => {
        console.log(`granted ${id} ${lease.token}`)
        await new Promise((r) => setTimeout(r, task.holdMs))
      })
    })
    await new Promise(() => {}) // until killed
    break
  }
  case 'permits': {
    const semaphore = baton.semaphore(task.name, { permits: task.permits, ttl: task.ttl })
    for (let i = 0; i < task.iterations; i++) {
      await semaphore.using(async () => {
        await appendFile(task.file, '+')
        await new Promise((r) => setImmediate(r))
        await appendFile(task.file, '-')
      })
    }
    console.log(`done ${task.iterations}`)
    await baton.close()
    break
  }
  case 'campaign': {
    const leadership = await baton.election(task.name, { ttl: task.ttl, ...(task.lockDelay !== undefined ? { lockDelay: task.lockDelay } : {}) }).campaign({ value: task.value })
    leadership.signal.addEventListener('abort', () => console.log(`lost ${(leadership.signal.reason as { code?: string }).code}`))
    console.log(`leader ${leadership.token}`)
    await new Promise(() => {}) // until killed
    break
  }
  case 'freeze': {
    // Holds of its own for each look; then the worker stops itself (SIGSTOP:
    // nothing of it runs after "stopping" until the parent's SIGCONT), with a
    // timer and an immediate already due. The sync look is the first code
    // after the stop; the timer falls due before any of the client's own.
    const holds = Object.fromEntries(await Promise.all(LOOKS.map(async (when) => [when, await holdAll(baton, `${task.name}/${when}`, task.ttl)] as const)))
    // And holds whose renewals are in flight as it stops: their answers are read after the pause.
    const extending = await holdAll(baton, `${task.name}/extend`, task.ttl)
    const look = (when: (typeof LOOKS)[number]) => console.log(`look ${when} ${JSON.stringify(holds[when]!.look())}`)
    setTimeout(() => look('timer'), 1)
    setImmediate(() => look('immediate'))
    const renewals = renewAll(extending)
    console.log('stopping')
    process.kill(process.pid, 'SIGSTOP')
    look('sync')
    void renewals.then((outcomes) => console.log(`renewed ${JSON.stringify(outcomes)}`))
    await new Promise(() => {}) // until killed
    break
  }
  case 'wait': {
    diagnostics_channel.subscribe('baton:wait', () => console.log('waiting'))
    const lease = await baton.mutex(task.name, { ttl: task.ttl, fair: task.fair ?? false }).acquire({ autoExtend: true })
    console.log(`granted ${lease.token}`)
    await new Promise(() => {}) // until killed
    break
  }
}

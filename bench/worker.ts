/**
 * Child process entry for multi-process scenarios: forked by bench/workers.ts
 * with WorkerArgs as JSON in argv[2], then driven by task messages over IPC
 * (see worker-protocol.ts). Contenders are created once and kept until exit.
 */
import { contendedFlows } from './flows.js'
import { createContender, specId, type Contender, type ContenderSpec } from './peers/index.js'
import { countSentCommands, sentCommands } from './redis-info.js'
import { reasonOf } from './report.js'
import { sleep, wallNow } from './util.js'
import type { FromWorker, TaskName, ToWorker, WorkerArgs, WorkerTasks } from './worker-protocol.js'

const { url } = JSON.parse(process.argv[2] ?? '{}') as WorkerArgs
const contenders = new Map<string, Promise<Contender>>()

function contenderFor(spec: ContenderSpec): Promise<Contender> {
  let contender = contenders.get(specId(spec))
  if (!contender) {
    contender = createContender(spec, url)
    contenders.set(specId(spec), contender)
    contender.catch(() => contenders.delete(specId(spec)))
  }
  return contender
}

const TASKS: { [K in TaskName]: (args: WorkerTasks[K]['args']) => Promise<WorkerTasks[K]['result']> } = {
  async prepare({ spec }) {
    await contenderFor(spec)
    return null
  },
  async flows({ spec, countCommands: window, ...options }) {
    const contender = await contenderFor(spec)
    if (!window) return contendedFlows(contender, options)
    countSentCommands()
    const [result, from, to] = await Promise.all([contendedFlows(contender, options), counterAt(window.from), counterAt(window.to)])
    return { ...result, commands: { from: from.at, to: to.at, sent: to.sent - from.sent } }
  },
}

/** sentCommands.count read at (or just after) epoch ms `at`, with the instant it was read. */
async function counterAt(at: number): Promise<{ at: number; sent: number }> {
  const delay = at - wallNow()
  if (delay > 0) await sleep(delay)
  return { at: wallNow(), sent: sentCommands.count }
}

function send(message: FromWorker): void {
  process.send?.(message)
}

async function closeAll(): Promise<void> {
  await Promise.allSettled([...contenders.values()].map(async (c) => (await c).close()))
}

// A peer's internal promise rejecting with nobody listening must not end the worker.
process.on('unhandledRejection', (error) => process.stderr.write(`bench worker ${process.pid}: unhandled rejection: ${reasonOf(error)}\n`))
process.on('disconnect', () => process.exit(0))
process.on('message', (message: ToWorker) => {
  if (message.type === 'exit') {
    void closeAll().finally(() => process.exit(0))
    return
  }
  const run = TASKS[message.task] as (args: unknown) => Promise<unknown>
  run(message.args).then(
    (result) => send({ type: 'done', id: message.id, result }),
    (error: unknown) => send({ type: 'failed', id: message.id, reason: reasonOf(error) }),
  )
})
send({ type: 'ready' })

/**
 * One chaos client process: connects its clients, runs each one's plan, and
 * appends every event to its own history file with a synchronous write made
 * before the call it describes is sent (a kill -9 loses no event the store
 * could have acted on). Fenced writes and "probe now" go over IPC.
 */
import { appendFileSync } from 'node:fs'
import { connect, type Baton } from '../../src/index.js'
import { historyNow, type HistoryEvent, type Primitive } from '../../src/chaos/history.js'
import { planOf } from '../../src/chaos/plan.js'
import { probeAll, runClient, type Probed } from '../../src/chaos/client.js'

export interface ChildSettings {
  readonly url: string
  readonly seed: number
  readonly processIndex: number
  readonly clients: number
  readonly primitives: readonly Primitive[]
  readonly ttlMs: number
  readonly names: number
  readonly prefix: string
  /** Set for a process started during the run (a replacement); else the runner's 'start' says it. */
  readonly stopAt?: number
  readonly file: string
  /** After stopAt, how long running steps may take before the clients are closed. */
  readonly graceMs: number
}

export type ChildMessage = { readonly type: 'ready' } | { readonly type: 'write'; readonly id: number; readonly name: string; readonly token: string; readonly lease: string; readonly process: number; readonly client: number }
export type ParentMessage = { readonly type: 'start'; readonly stopAt: number } | { readonly type: 'write'; readonly id: number; readonly accepted: boolean } | { readonly type: 'probe' }

const settings = JSON.parse(process.argv[2]!) as ChildSettings
const record = (event: HistoryEvent) => appendFileSync(settings.file, `${JSON.stringify(event)}\n`)
const active = new Map<string, Probed>()
const pending = new Map<number, (accepted: boolean) => void>()
let nextWrite = 0

let stopAt: number | undefined = settings.stopAt
let started: ((stopAt: number) => void) | undefined
process.on('message', (message: ParentMessage) => {
  if (message.type === 'start') {
    stopAt = message.stopAt
    started?.(message.stopAt)
  } else if (message.type === 'probe') probeAll(active, settings.processIndex, record)
  else {
    pending.get(message.id)?.(message.accepted)
    pending.delete(message.id)
  }
})

/** Connects one client, trying again until the run ends (the store may be down: a fault). */
async function client(): Promise<Baton> {
  for (;;) {
    try {
      return await connect(settings.url, { commandTimeout: 2000 })
    } catch (error) {
      await new Promise((resolve) => setTimeout(resolve, 200))
      if (stopAt !== undefined && historyNow() > stopAt) {
        console.error(`chaos process ${settings.processIndex}: could not connect before the end of the run: ${String(error)}`)
        process.exit(0)
      }
    }
  }
}
const clients = await Promise.all(Array.from({ length: settings.clients }, client))
// The run starts once the first processes are connected: the runner says when it ends.
if (process.connected) process.send!({ type: 'ready' } satisfies ChildMessage)
stopAt ??= await new Promise<number>((resolve) => { started = resolve })
const plan = planOf({ seed: settings.seed, processIndex: settings.processIndex, clients: settings.clients, primitives: settings.primitives, ttlMs: settings.ttlMs, names: settings.names, stepsPerClient: 400 })
const closeAll = () => Promise.allSettled(clients.map((c) => c.close()))
const grace = setTimeout(closeAll, Math.max(0, stopAt! + settings.graceMs - historyNow()))
await Promise.all(clients.map((baton, client) => runClient({
  process: settings.processIndex, client, baton, steps: plan[client]!, prefix: settings.prefix, ttlMs: settings.ttlMs, stopAt: stopAt!, record, active,
  write: (name, token, lease) => new Promise<boolean>((resolve) => {
    if (!process.connected) return resolve(false)
    const id = ++nextWrite
    pending.set(id, resolve)
    process.send!({ type: 'write', id, name, token: String(token), lease, process: settings.processIndex, client } satisfies ChildMessage)
  }),
})))
clearTimeout(grace)
await closeAll()
process.disconnect?.()

/** Parent side of bench workers: fork, call tasks over IPC, stop (and always kill on exit). */
import { fork, type ChildProcess } from 'node:child_process'
import { withTimeout } from './util.js'
import type { FromWorker, TaskName, ToWorker, WorkerArgs, WorkerTasks } from './worker-protocol.js'

const WORKER_ENTRY = new URL('./worker.js', import.meta.url)
const live = new Set<WorkerProcess>()

process.on('exit', () => {
  for (const worker of live) worker.kill()
})

export class WorkerProcess {
  private nextId = 1
  private readonly pending = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>()
  private exited = false
  private readonly exit: Promise<void>

  private constructor(private readonly child: ChildProcess) {
    live.add(this)
    this.exit = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exited = true
        live.delete(this)
        const error = new Error(`bench worker ${child.pid} exited (${signal ?? `code ${code}`})`)
        for (const call of this.pending.values()) call.reject(error)
        this.pending.clear()
        resolve()
      })
    })
    child.on('message', (message: FromWorker) => {
      if (message.type === 'ready') return
      const call = this.pending.get(message.id)
      if (!call) return
      this.pending.delete(message.id)
      if (message.type === 'done') call.resolve(message.result)
      else call.reject(new Error(message.reason))
    })
  }

  static async start(args: WorkerArgs, timeoutMs = 10_000): Promise<WorkerProcess> {
    const child = fork(WORKER_ENTRY, [JSON.stringify(args)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'], execArgv: [] })
    const worker = new WorkerProcess(child)
    const ready = new Promise<void>((resolve, reject) => {
      child.on('message', (message: FromWorker) => message.type === 'ready' && resolve())
      child.once('exit', (code) => reject(new Error(`bench worker exited (code ${code}) before it was ready`)))
      child.once('error', reject)
    })
    try {
      await withTimeout(ready, timeoutMs, 'starting a bench worker')
    } catch (error) {
      worker.kill()
      throw error
    }
    return worker
  }

  get pid(): number | undefined {
    return this.child.pid
  }

  call<K extends TaskName>(task: K, args: WorkerTasks[K]['args'], timeoutMs: number): Promise<WorkerTasks[K]['result']> {
    if (this.exited) return Promise.reject(new Error(`bench worker ${this.child.pid} has exited`))
    const id = this.nextId++
    const result = new Promise<WorkerTasks[K]['result']>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject })
    })
    this.child.send({ type: 'task', id, task, args } satisfies ToWorker)
    return withTimeout(result, timeoutMs, `worker task "${task}"`).finally(() => this.pending.delete(id))
  }

  /** Asks the worker to close its connections and exit; SIGKILL after `graceMs`. */
  async stop(graceMs = 3000): Promise<void> {
    if (this.exited) return
    try {
      this.child.send({ type: 'exit' } satisfies ToWorker)
    } catch {
      // channel already closed
    }
    try {
      await withTimeout(this.exit, graceMs, 'worker exit')
    } catch {
      this.kill()
      await this.exit
    }
  }

  kill(): void {
    if (this.exited) return
    try {
      this.child.kill('SIGKILL')
    } catch {
      // already gone
    }
  }
}

/** Stops every worker still running (end of the benchmark, or after a failure). */
export async function stopWorkers(): Promise<void> {
  await Promise.allSettled([...live].map((worker) => worker.stop()))
}

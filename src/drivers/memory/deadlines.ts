import { monotonicNow } from '../../core/clock.js'

/** An entry of the heap: `fireAt` (monotonic ms) and its place in the heap (-1: not in it). */
export interface Deadline {
  fireAt: number
  heapIndex: number
}

/**
 * Every hold's expiry in one indexed binary min-heap under one timer,
 * instead of a Node timer (and a closure) per held lock: with 100,000 locks
 * held, a Timeout per lock was the largest part of the store's memory, and
 * arming and clearing one per grant and release a visible part of its CPU.
 * Removal is by index, so a release or renewal leaves nothing behind.
 */
export class Deadlines<T extends Deadline> {
  private readonly heap: T[] = []
  private timer: NodeJS.Timeout | undefined
  private timerAt = Infinity

  constructor(private readonly fire: (entry: T) => void) {}

  /** Adds `entry`, or moves it if it is in already. */
  set(entry: T, fireAt: number): void {
    entry.fireAt = fireAt
    if (entry.heapIndex < 0) {
      entry.heapIndex = this.heap.length
      this.heap.push(entry)
      this.up(entry.heapIndex)
    } else {
      this.up(entry.heapIndex)
      this.down(entry.heapIndex)
    }
    this.arm()
  }

  delete(entry: T): void {
    const at = entry.heapIndex
    if (at < 0) return
    entry.heapIndex = -1
    const last = this.heap.pop()!
    if (at < this.heap.length) {
      this.heap[at] = last
      last.heapIndex = at
      this.up(at)
      this.down(at)
    }
    // The timer stays armed: when it fires early it finds nothing due and re-arms.
  }

  private arm(): void {
    const head = this.heap[0]
    if (!head || head.fireAt >= this.timerAt) return
    clearTimeout(this.timer)
    this.timerAt = head.fireAt
    this.timer = setTimeout(() => this.run(), Math.max(0, Math.ceil(head.fireAt - monotonicNow())))
    this.timer.unref()
  }

  private run(): void {
    this.timer = undefined
    this.timerAt = Infinity
    const now = monotonicNow()
    for (let head = this.heap[0]; head && head.fireAt <= now; head = this.heap[0]) {
      this.delete(head)
      this.fire(head)
    }
    this.arm()
  }

  private up(at: number): void {
    const heap = this.heap
    const entry = heap[at]!
    while (at > 0) {
      const parent = (at - 1) >> 1
      if (heap[parent]!.fireAt <= entry.fireAt) break
      heap[at] = heap[parent]!
      heap[at]!.heapIndex = at
      at = parent
    }
    heap[at] = entry
    entry.heapIndex = at
  }

  private down(at: number): void {
    const heap = this.heap
    const entry = heap[at]!
    const n = heap.length
    for (;;) {
      let child = 2 * at + 1
      if (child >= n) break
      if (child + 1 < n && heap[child + 1]!.fireAt < heap[child]!.fireAt) child++
      if (heap[child]!.fireAt >= entry.fireAt) break
      heap[at] = heap[child]!
      heap[at]!.heapIndex = at
      at = child
    }
    heap[at] = entry
    entry.heapIndex = at
  }
}

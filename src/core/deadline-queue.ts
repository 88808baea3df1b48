/**
 * Deadlines that all run the same timeout, on one timer. Every item added
 * gets `timeoutMs` from now, so their deadlines come in the order they were
 * added: a queue whose finished front is dropped as items are added, and
 * one timer that wakes only for the oldest open deadline (about once per
 * timeout under steady load). A timer set and cleared per request was
 * measurable in the client's CPU per acquire+release pair, which is why the
 * Redis driver's command deadlines and Redlock's vote deadlines use this.
 * Unref'd: whatever keeps a request out (a connection) keeps the process
 * alive, not its deadline.
 */
export class DeadlineQueue<T> {
  private items: T[] = []
  private deadlines: number[] = []
  private head = 0
  private timer: NodeJS.Timeout | undefined

  constructor(
    readonly timeoutMs: number,
    /** Whether the item needs its deadline no more (answered, failed). */
    private readonly isDone: (item: T) => boolean,
    /** Called once for an item still open at its deadline. */
    private readonly expire: (item: T) => void,
    /** The clock the deadlines are read on (a test passes its own, so it asserts no timing). */
    private readonly now: () => number = () => performance.now(),
  ) {}

  add(item: T): void {
    const { items, isDone } = this
    while (this.head < items.length && isDone(items[this.head]!)) this.head++
    if (this.head === items.length) {
      items.length = 0
      this.deadlines.length = 0
      this.head = 0
    } else if (this.head > 1024 && this.head * 2 > items.length) {
      this.items = items.slice(this.head)
      this.deadlines = this.deadlines.slice(this.head)
      this.head = 0
    }
    this.items.push(item)
    this.deadlines.push(this.now() + this.timeoutMs)
    if (!this.timer) this.arm(this.timeoutMs)
  }

  private arm(ms: number): void {
    this.timer = setTimeout(this.sweep, Math.max(1, Math.ceil(ms)))
    this.timer.unref()
  }

  /** Expires what is past its deadline and re-arms for the next one (the timer calls it). */
  readonly sweep = (): void => {
    clearTimeout(this.timer)
    this.timer = undefined
    const now = this.now()
    const { items, deadlines } = this
    while (this.head < items.length) {
      const item = items[this.head]!
      if (!this.isDone(item)) {
        if (deadlines[this.head]! > now) return this.arm(deadlines[this.head]! - now)
        this.expire(item)
      }
      this.head++
    }
  }

  close(): void {
    clearTimeout(this.timer)
    this.timer = undefined
  }
}

const SWEEP_MIN_MS = 250
const SWEEP_MAX_MS = 60_000

/**
 * When a SQL store's client sweeps idle state (bounded state, ?fenceTtl=):
 * every half idle window (at least 250 ms, at most a minute), with a tenth
 * of jitter so clients started together do not sweep together, at once
 * again after a full batch, and later again when the store is away (the
 * next sweep catches up). `sweep` answers whether its batch was full.
 */
export class Sweeper {
  private timer: NodeJS.Timeout | undefined
  private stopped = false

  constructor(
    private readonly fenceTtlMs: number,
    private readonly sweep: () => Promise<boolean>,
  ) {}

  start(): void {
    this.schedule(this.interval())
  }

  stop(): void {
    this.stopped = true
    clearTimeout(this.timer)
  }

  /** Half the idle window, so a name's rows go between 1 and 1.5 windows after its last use. */
  private interval(): number {
    const base = Math.min(SWEEP_MAX_MS, Math.max(SWEEP_MIN_MS, this.fenceTtlMs / 2))
    return base * (0.9 + Math.random() * 0.2)
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return
    this.timer = setTimeout(() => {
      this.sweep().then(
        (full) => this.schedule(full ? 0 : this.interval()),
        () => this.schedule(this.interval()),
      )
    }, delayMs)
    this.timer.unref()
  }
}

/**
 * Election observers by name (Driver.observe), for a driver that follows
 * the observed names' changes its own way (a channel, a stream, a poll) and
 * tells each name's observers. A name's first observer and its last one
 * leaving are where a driver starts and stops following it.
 */
export class Observers {
  private readonly byName = new Map<string, Set<() => void>>()

  /**
   * Adds an observer of `name`; the function returned removes it.
   * `onFirst` runs when it is the name's first, `onLastGone` when the
   * name's last observer leaves.
   */
  add(name: string, onChange: () => void, onFirst?: () => void, onLastGone?: () => void): () => void {
    let set = this.byName.get(name)
    if (!set) {
      this.byName.set(name, (set = new Set()))
      onFirst?.()
    }
    // Its own entry: the same function observing twice is two observers.
    const mine = () => onChange()
    set.add(mine)
    return () => {
      set.delete(mine)
      if (set.size > 0 || this.byName.get(name) !== set) return
      this.byName.delete(name)
      onLastGone?.()
    }
  }

  /** How many names are observed. */
  get size(): number {
    return this.byName.size
  }

  names(): string[] {
    return [...this.byName.keys()]
  }

  notify(name: string): void {
    for (const each of this.byName.get(name) ?? []) each()
  }

  /** Every observer looks again (notices sent while the driver's link was down are missed). */
  notifyAll(): void {
    for (const set of this.byName.values()) for (const each of set) each()
  }

  clear(): void {
    this.byName.clear()
  }
}

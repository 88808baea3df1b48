import { CreateMode, errorCode, Exception, zkDiagnosis, type ZkSession, type ZkTarget } from './session.js'
import { parentOf, ROOT } from './paths.js'

/** An empty parent is removed this long after this client's last entry under it left. */
const PARENT_LINGER_MS = 10_000

/**
 * The parent nodes of the names this client has entries under: made when
 * missing, and removed a while after this client's last entry under one
 * left (ZooKeeper refuses while other clients' entries remain).
 */
export class Parents {
  /** Entries of this client per name. */
  private readonly byName = new Map<string, { count: number; linger?: NodeJS.Timeout }>()
  private closed = false

  constructor(private readonly target: ZkTarget) {}

  /** An entry of this client under `name`. */
  entered(name: string): void {
    const entry = this.byName.get(name) ?? { count: 0 }
    clearTimeout(entry.linger)
    entry.count += 1
    this.byName.set(name, entry)
  }

  /** An entry of this client under `name` left; the last one's session removes the parent a while later. */
  left(name: string, session: ZkSession): void {
    const entry = this.byName.get(name)
    if (!entry) return
    entry.count -= 1
    if (entry.count > 0 || this.closed) return
    entry.linger = setTimeout(() => {
      if (this.byName.get(name) !== entry || entry.count > 0) return
      this.byName.delete(name)
      // Fails harmlessly while other clients still have entries under it.
      session.remove(parentOf(name)).catch(() => {})
    }, PARENT_LINGER_MS)
    entry.linger.unref()
  }

  /** On close: no removal waits any more; the names used, for the last tidy-up. */
  close(): string[] {
    this.closed = true
    for (const entry of this.byName.values()) clearTimeout(entry.linger)
    return [...this.byName.keys()]
  }

  async create(session: ZkSession, parent: string): Promise<void> {
    for (const path of [ROOT, parent]) {
      await session.create(path, undefined, CreateMode.PERSISTENT).catch(async (error: unknown) => {
        if (errorCode(error) !== Exception.NODE_EXISTS) throw await zkDiagnosis(this.target, error)
      })
    }
  }
}

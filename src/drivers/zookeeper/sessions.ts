import { clientClosed } from '../../core/errors.js'
import { diagnosed } from '../sequenced/quorum.js'
import { errorCode, Exception, ZkSession, zkDiagnosis, type ZkTarget } from './session.js'

/** The session behind admin calls (inspect, list, forceRelease). */
export const ADMIN_SESSION_MS = 10_000

/** What becomes of a session, for the holds and observers on it. */
export interface SessionEvents {
  /** Every node of the session is gone (it is closed already). */
  expired(session: ZkSession): void
  /** Nothing heard for a whole session timeout: the ensemble may have expired it. */
  inDoubt(session: ZkSession): void
  /** Back on a new connection: a notice sent while it was cut may be lost. */
  reconnected(session: ZkSession): void
}

/** This client's ZooKeeper sessions, one per length asked for (the ensemble clamps it). */
export class ZkSessions {
  private readonly byLength = new Map<number, Promise<ZkSession>>()
  private closed = false

  constructor(private readonly target: ZkTarget, private readonly events: SessionEvents) {}

  /**
   * The session behind holds of `ttlMs`: the ttl (rounded up to whole
   * seconds), so a crashed client's holds end within their ttl, plus the lock
   * delay, so its nodes outlive the end of its holds by it. A heartbeat every
   * quarter of it keeps it confirmed; a hold counts only as far as the last
   * answered request covers it (ttlLeft). One per distinct length; the
   * ensemble clamps it (see inspect's note).
   */
  for(ttlMs: number, lockDelayMs = 0): Promise<ZkSession> {
    // A call still on its way when close() ran must not open a session nobody closes:
    // its client would reconnect for ever once the ensemble is gone, keeping the process alive.
    if (this.closed) return Promise.reject(clientClosed('this ZooKeeper client'))
    const requested = Math.max(1000, Math.ceil((ttlMs + Math.max(0, lockDelayMs)) / 1000) * 1000)
    let pending = this.byLength.get(requested)
    if (!pending) {
      const session = new ZkSession(this.target, requested, (s) => this.expired(requested, s), (s) => this.events.inDoubt(s), (s) => this.events.reconnected(s))
      pending = session.open().then(() => session, async (error: unknown) => {
        throw await zkDiagnosis(this.target, error)
      })
      this.byLength.set(requested, pending)
      pending.catch(() => {
        if (this.byLength.get(requested) === pending) this.byLength.delete(requested)
      })
    }
    return pending
  }

  /** The session of admin calls (inspect, list, forceRelease, observers). */
  admin(): Promise<ZkSession> {
    return this.for(ADMIN_SESSION_MS)
  }

  /** Any open session (or none), for the last removals of a closing client. */
  async any(): Promise<ZkSession | undefined> {
    return [...this.byLength.values()][0]?.catch(() => undefined)
  }

  async note(): Promise<string> {
    const parts: string[] = []
    for (const [requested, pending] of this.byLength) {
      const session = await pending.catch(() => undefined)
      if (session) parts.push(`${requested / 1000} s → ${session.timeoutMs / 1000} s`)
    }
    return parts.join(', ')
  }

  /** Close begins: no session is opened from now on. */
  closing(): void {
    this.closed = true
  }

  /** Close ends: every session closes (the ensemble removes its nodes). */
  closeAll(): void {
    for (const pending of this.byLength.values()) void pending.then((s) => s.close(), () => {})
    this.byLength.clear()
  }

  private expired(requested: number, session: ZkSession): void {
    void this.byLength.get(requested)?.then((s) => {
      if (s === session) this.byLength.delete(requested)
    }, () => {})
    session.close()
    this.events.expired(session)
  }
}

/** Removes a node; one already gone is no failure. */
export async function removeNode(target: ZkTarget, session: ZkSession, path: string): Promise<void> {
  try {
    await session.remove(path)
  } catch (error) {
    if (errorCode(error) !== Exception.NO_NODE) throw await zkDiagnosis(target, error)
  }
}

/** A request of this client: its failure as the typed error every store reports (see zkDiagnosis). */
export function guarded<T>(target: ZkTarget, promise: Promise<T>): Promise<T> {
  return diagnosed(promise, (cause) => zkDiagnosis(target, cause))
}

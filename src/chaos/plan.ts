/**
 * The generator: from a seed, each client's list of steps, made up front.
 * One seed (with the same process and client counts and the same store's
 * offer) gives the same plan on every run; the timing of a run does not
 * repeat (the store, the network and the nemesis's moments differ), so a
 * replay re-runs the same plan, not the same interleaving.
 */
import type { Primitive } from './history.js'
import { Random } from './prng.js'

/** How a step waits for its hold. */
export type WaitMode = { readonly kind: 'try' } | { readonly kind: 'wait'; readonly ms: number } | { readonly kind: 'abort'; readonly afterMs: number }

export type Step =
  | {
    readonly action: 'hold'
    readonly primitive: Primitive
    /** Name indexes (several for a multi-lock). */
    readonly names: readonly number[]
    /** rwlock: which side (a write may be downgraded to read while held). */
    readonly side: 'read' | 'write' | 'exclusive'
    readonly weight: number
    readonly wait: WaitMode
    /** Renewed by the watchdog; without it a hold that lasts past its ttl lapses. */
    readonly autoExtend: boolean
    readonly holdMs: number
    readonly extendAt?: number
    readonly downgradeAt?: number
    readonly proclaimAt?: number
    readonly writes: number
    /** Probes of held / signal / remainingMs at these moments (ms into the hold). */
    readonly probesAt: readonly number[]
    /** Let the hold run out (no release) instead of releasing it. */
    readonly lapse: boolean
  }
  | { readonly action: 'forceRelease'; readonly primitive: Primitive; readonly names: readonly number[] }
  | { readonly action: 'leader'; readonly names: readonly number[] }
  | { readonly action: 'idle'; readonly ms: number }

export interface PlanSettings {
  readonly seed: number
  readonly processIndex: number
  readonly clients: number
  readonly primitives: readonly Primitive[]
  readonly ttlMs: number
  /** Names per primitive: few, so clients contend. */
  readonly names: number
  readonly stepsPerClient: number
  /**
   * Every hold waits (no tryAcquire, no abort, no forced release): some
   * client is always queued on each name, so a window where the store lets
   * a second holder in (a failover, a restart) is tried. `baton verify`
   * sets it.
   */
  readonly contend?: boolean
}

/** Permits of a semaphore name: 2 or 3, from its index, so every plan agrees. */
export const permitsOf = (index: number): number => 2 + (index % 2)

export function planOf(settings: PlanSettings): Step[][] {
  return Array.from({ length: settings.clients }, (_, client) => {
    const random = Random.derive(settings.seed, settings.processIndex, client)
    return Array.from({ length: settings.stepsPerClient }, () => stepOf(random, settings))
  })
}

function stepOf(random: Random, s: PlanSettings): Step {
  const roll = random.next()
  const primitive = random.pick(s.primitives)
  const name = () => random.int(0, s.names - 1)
  if (roll < 0.04 && !s.contend) return { action: 'forceRelease', primitive: primitive === 'multi' ? 'mutex' : primitive, names: [name()] }
  if (roll < 0.1 && s.primitives.includes('election')) return { action: 'leader', names: [name()] }
  if (roll < 0.14) return { action: 'idle', ms: random.int(10, 300) }
  const ttl = s.ttlMs
  const lapse = random.chance(0.08)
  const autoExtend = !lapse && random.chance(0.6)
  // Most holds end well inside one ttl; a lapse outlives it; a renewed one may last a few.
  const holdMs = lapse ? Math.round(ttl * (1.2 + random.next())) : autoExtend ? random.int(20, ttl * 2) : random.int(10, Math.round(ttl * 0.5))
  const roll2 = random.next()
  const wait: WaitMode = s.contend ? { kind: 'wait', ms: random.int(ttl * 3, ttl * 10) } : roll2 < 0.25 ? { kind: 'try' } : roll2 < 0.35 ? { kind: 'abort', afterMs: random.int(5, ttl) } : { kind: 'wait', ms: random.int(ttl, ttl * 6) }
  const names = primitive === 'multi'
    ? [...new Set(Array.from({ length: random.int(2, 3) }, name))]
    : [name()]
  const side = primitive === 'rwlock' ? (random.chance(0.5) ? 'read' : 'write') : 'exclusive'
  const probes = Array.from({ length: random.int(1, 4) }, () => random.int(0, holdMs + Math.round(ttl * 0.3))).sort((a, b) => a - b)
  const exclusive = primitive !== 'semaphore' && side !== 'read'
  return {
    action: 'hold',
    primitive,
    names,
    side,
    weight: primitive === 'semaphore' ? random.int(1, permitsOf(names[0]!)) : 1,
    wait,
    autoExtend,
    holdMs,
    ...(random.chance(0.3) ? { extendAt: random.int(0, holdMs) } : {}),
    ...(side === 'write' && random.chance(0.4) ? { downgradeAt: random.int(0, holdMs) } : {}),
    ...(primitive === 'election' && random.chance(0.5) ? { proclaimAt: random.int(0, holdMs) } : {}),
    writes: exclusive ? random.int(0, 3) : 0,
    probesAt: probes,
    lapse,
  }
}

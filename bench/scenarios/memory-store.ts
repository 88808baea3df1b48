import { spec } from '../peers/index.js'
import { pairsScenario } from './pairs.js'

export const memoryStore = pairsScenario({
  id: 'memory-store',
  figure: '6',
  title: '6. Memory store: uncontended acquire+release, one key, one flow',
  notes: 'baton on `memory://` against async-mutex (both in-process, no I/O).',
  contenders: [spec('async-mutex'), spec('baton-memory')],
  baseline: 'async-mutex',
  subject: 'baton-memory',
  flows: 1,
  runs: [5, 2],
  durationMs: [500, 200],
  warmupMs: [300, 100],
  minRatio: 0.5,
})

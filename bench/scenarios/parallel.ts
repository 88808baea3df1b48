import { spec } from '../peers/index.js'
import { pairsScenario } from './pairs.js'

export const parallel = pairsScenario({
  id: 'parallel',
  figure: '2',
  title: '2. 64 parallel flows, each on its own key, one process (Redis)',
  notes: '64 async flows on one client per contender, each looping acquire+release on its own key; total pairs/s.',
  contenders: [spec('raw'), spec('baton'), spec('redlock'), spec('sesame-redlock'), spec('redis-semaphore')],
  baseline: 'raw',
  subject: 'baton',
  flows: 64,
  runs: [5, 2],
  durationMs: [800, 250],
  warmupMs: [300, 100],
  minRatio: 0.95, // issue 19: 64 flows at ≥ 0.95× the raw baseline
})

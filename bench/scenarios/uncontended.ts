import { spec } from '../peers/index.js'
import { pairsScenario } from './pairs.js'

export const uncontended = pairsScenario({
  id: 'uncontended',
  figure: '1',
  title: '1. Uncontended acquire+release, one key, one flow (Redis)',
  notes: 'One async flow: acquire, release, repeat, on one key; latency is of one acquire+release pair.',
  contenders: [spec('raw'), spec('baton'), spec('redlock'), spec('sesame-redlock'), spec('redis-semaphore')],
  baseline: 'raw',
  subject: 'baton',
  flows: 1,
  runs: [5, 2],
  durationMs: [800, 250],
  warmupMs: [300, 100],
  minRatio: 0.95,
  beatEveryPeer: true,
})

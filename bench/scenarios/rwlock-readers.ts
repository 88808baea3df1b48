import { spec } from '../peers/index.js'
import { pairsScenario } from './pairs.js'

/**
 * 9. Readers must not serialize: 64 flows reading ONE rwlock name, against
 * figure 2's shape for the baton mutex (64 flows, each on its own key) in the
 * same runs.
 */
export const rwlockReaders = pairsScenario({
  id: 'rwlock-readers',
  figure: '9',
  title: '9. rwlock readers: 64 parallel flows reading ONE name, one process (Redis)',
  notes: '64 async flows on one client, each looping `rwlock(name, { ttl: \'10s\' }).read()` acquire + release, all on the SAME name; '
    + 'against the default baton mutex with 64 flows each on its own key (figure 2), alternating in the same runs. '
    + 'No writer takes part, so a read never has to wait for another.',
  contenders: [spec('baton'), spec('baton-rwlock-read')],
  baseline: 'baton',
  subject: 'baton-rwlock-read',
  flows: 64,
  sharedKey: ['baton-rwlock-read'],
  metric: 'rwlock read pairs/s, 64 flows on 1 name (vs mutex, 64 own keys)',
  // More, shorter runs than figure 2: the per-run ratio swings on a noisy 2-core box.
  runs: [7, 2],
  durationMs: [600, 250],
  warmupMs: [300, 100],
  minRatio: 0.8,
})

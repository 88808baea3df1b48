/**
 * M1-M2. baton on MySQL (a private MariaDB server, commits flushed to
 * disk): uncontended pairs against two bare UPDATEs on the same server, and
 * the hand-over of figure 3 with the same baseline beside it.
 */
import { spec } from '../peers/index.js'
import { pairsScenario } from './pairs.js'
import { sqlHandoff } from './sql-handoff.js'

export const mysqlUncontended = pairsScenario({
  id: 'mysql-uncontended',
  figure: 'M1',
  title: 'M1. Uncontended acquire+release, one key, one flow (MySQL / MariaDB)',
  notes: 'One async flow: acquire, release, repeat, on one key. Baseline: a lock as one row, taken by one single-row '
    + '`UPDATE` and released by another (two round trips, two commits), on a mysql2 pool of 10 like baton\'s; '
    + 'baton runs one transaction per acquire and per release (the name\'s row lock, its holds and line read, the grant written: '
    + 'about eight round trips each).',
  contenders: [spec('mysql-update'), spec('baton')],
  baseline: 'mysql-update',
  subject: 'baton',
  flows: 1,
  runs: [5, 2],
  durationMs: [1000, 300],
  warmupMs: [300, 100],
  minRatio: 0.2,
  store: 'mysql',
})

export const mysqlHandoff = sqlHandoff({
  id: 'mysql-handoff',
  figure: 'M2',
  store: 'MySQL / MariaDB',
  url: (ctx) => ctx.mysqlUrl(),
  how: 'A release hands the name over in its own transaction and leaves the next holder\'s client a wake-up row, '
    + 'which it reads when the releasing client rings its doorbell (a named lock the waiting poller blocks on). '
    + 'The bare UPDATE baseline tries again every 1 ms.',
  others: [spec('mysql-update')],
})

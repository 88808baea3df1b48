import { spec } from '../peers/index.js'
import { commandsScenario } from './commands.js'

/** 8. Figure 4 for the fair mutex, against the default (not fair) baton mutex in the same runs. */
export const fairCommands = commandsScenario({
  id: 'fair-commands',
  figure: '8',
  title: '8. Fair mutex: commands per hand-over, 16 and 256 waiters on one key (Redis)',
  subjectName: 'fair mutex',
  subject: 'baton-fair',
  contenders: [spec('baton-fair'), spec('baton')],
  notes: "Subject: `baton.mutex(key, { ttl: '10s', fair: true })`; for reference the default (not fair) baton mutex.",
  runs: [3, 1],
  windowMs: [800, 400],
  warmupMs: [300, 150],
})

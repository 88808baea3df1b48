-- Bounded state, under the names' locks: expired phantoms and stale entries
-- go (their names count as just touched), then names idle for the window,
-- their fence counter with them (see nextToken in src/core/hold-table.ts
-- for why tokens still increase). Wake-ups nobody read in ten minutes go
-- too (their client is gone). ? names, now µs (6 times), names, cutoff µs,
-- names, names, names, now µs.
UPDATE baton_names n SET touched_at = ?
 WHERE n.name IN (?)
   AND (EXISTS (SELECT 1 FROM baton_holds h WHERE h.name = n.name AND h.blocked_until <= ? - 1000000)
        OR EXISTS (SELECT 1 FROM baton_line l WHERE l.name = n.name AND l.stale_at <= ?));
DELETE FROM baton_holds WHERE name IN (?) AND blocked_until <= ? - 1000000;
DELETE FROM baton_line WHERE name IN (?) AND stale_at <= ?;
DELETE FROM baton_names
 WHERE name IN (?) AND touched_at < ?
   AND NOT EXISTS (SELECT 1 FROM baton_holds h WHERE h.name = baton_names.name)
   AND NOT EXISTS (SELECT 1 FROM baton_line l WHERE l.name = baton_names.name);
DELETE FROM baton_wakes WHERE created_at < ? - 600000000 LIMIT 1000

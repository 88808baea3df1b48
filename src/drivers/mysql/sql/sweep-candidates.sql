-- Bounded state, first step (no locks): names idle for the window, or with
-- holds past their lock delay (a second's margin, so it never races the
-- renewal of a lease just running out) or stale line entries.
-- ? cutoff µs, now µs, now µs, batch.
SELECT n.name FROM baton_names n
 WHERE (n.touched_at < ?
        AND NOT EXISTS (SELECT 1 FROM baton_holds h WHERE h.name = n.name)
        AND NOT EXISTS (SELECT 1 FROM baton_line l WHERE l.name = n.name))
    OR EXISTS (SELECT 1 FROM baton_holds h WHERE h.name = n.name AND h.blocked_until <= ? - 1000000)
    OR EXISTS (SELECT 1 FROM baton_line l WHERE l.name = n.name AND l.stale_at <= ?)
 LIMIT ?

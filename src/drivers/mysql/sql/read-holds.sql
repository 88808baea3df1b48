-- A name's holds and lock-delay phantoms, locked: an extend (which does not
-- lock the name) that is still running is waited for, never misread as an
-- expired lease. ? name.
SELECT owner, mode, weight, token, expires_at, blocked_until, description, since, value
  FROM baton_holds WHERE name = ? ORDER BY token FOR UPDATE

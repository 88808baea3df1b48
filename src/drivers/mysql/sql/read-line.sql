-- A name's waiting line in serving order. ? name.
SELECT owner, mode, weight, ttl_ms, lock_delay_ms, stale_at, description, since, value
  FROM baton_line WHERE name = ? ORDER BY seq

-- Joins the line. ? name, owner, mode, weight, ttl_ms, lock_delay_ms,
-- stale_at, description, since ms, value.
INSERT INTO baton_line (name, owner, mode, weight, ttl_ms, lock_delay_ms, stale_at, description, since, value)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)

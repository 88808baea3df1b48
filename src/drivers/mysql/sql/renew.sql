-- extend's second step: new lease ends, counted from the clock read in the
-- first. ? expires_at, ttl µs, list of (name, owner, token).
UPDATE baton_holds SET expires_at = ?, blocked_until = ? + lock_delay_ms * 1000
 WHERE (name, owner, token) IN (?)

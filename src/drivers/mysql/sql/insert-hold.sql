-- A new hold. An old row of the same owner (a phantom of its own expired
-- hold) is replaced. ? name, owner, mode, weight, token, expires_at,
-- lock_delay_ms, blocked_until, description, since ms, value.
REPLACE INTO baton_holds (name, owner, mode, weight, token, expires_at, lock_delay_ms, blocked_until, description, since, value)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)

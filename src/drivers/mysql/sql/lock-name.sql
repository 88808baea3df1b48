-- Creates a name's row on first use, and takes its row lock either way
-- (INSERT ... ON DUPLICATE KEY UPDATE locks an existing row exclusively:
-- no shared-then-exclusive upgrade that two first users could deadlock on).
-- ? name, kind, fair, permits.
INSERT INTO baton_names (name, kind, fair, permits, last_token, touched_at)
VALUES (?, ?, ?, ?, 0, CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED))
ON DUPLICATE KEY UPDATE name = name

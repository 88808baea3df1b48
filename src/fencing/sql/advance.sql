-- Advance the fence of $1 to token $2 unless a higher token was accepted.
-- Returns one row (the token) when accepted, none when stale.
--
-- The upsert takes the row lock, and READ COMMITTED re-evaluates the WHERE
-- on the newest version after waiting for a concurrent writer, so two
-- writers never both pass with tokens out of order. The lock is held until
-- the caller's transaction ends: the write that follows in the same
-- transaction is ordered with the fence.
INSERT INTO baton_fences AS fence (resource, token) VALUES ($1, $2::numeric)
ON CONFLICT (resource) DO UPDATE SET token = excluded.token, updated_at = now()
  WHERE fence.token <= excluded.token
RETURNING token::text

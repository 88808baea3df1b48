-- proclaim: leader election; replaces the value kept beside a live hold
-- (migrations/0004_election.sql), keeping its token and lease. Its trigger
-- tells the name's observers.
-- $1 name, $2 owner, $3 token, $4 the new value.
-- Returns done: whether the owner still held the name with this token.
WITH changed AS (
  UPDATE {{schema}}.holds SET value = $4::text
   WHERE name = $1::text AND owner = $2::text AND token = $3::bigint AND expires_at > clock_timestamp()
  RETURNING 1
)
SELECT count(*) > 0 AS done FROM changed

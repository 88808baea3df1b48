-- extend: renews many holds in one statement, each only while it is still
-- the owner's and its lease has not run out (by the database clock).
-- $1 names, $2 owners, $3 tokens (arrays, one entry per hold), $4 ttl ms.
-- Returns the 1-based positions of the holds renewed.
WITH wanted AS (
  SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[]) WITH ORDINALITY AS w(name, owner, token, i)
)
UPDATE {{schema}}.holds h
   SET expires_at = clock_timestamp() + $4::integer * interval '1 ms',
       blocked_until = clock_timestamp() + ($4::bigint + h.lock_delay_ms) * interval '1 ms'
  FROM wanted w
 WHERE h.name = w.name AND h.owner = w.owner AND h.token = w.token AND h.expires_at > clock_timestamp()
RETURNING w.i

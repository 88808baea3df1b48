-- acquire: one attempt to take a name; if busy, optionally wait in line
-- (see {{schema}}.acquire in migrations/0001_schema.sql).
-- $1 name, $2 owner, $3 kind, $4 mode, $5 fair, $6 permits, $7 ttl ms,
-- $8 lock delay ms, $9 join the line when busy, $10 line entry ttl ms,
-- $11 wake-up channel prefix.
-- Returns one row: status, token, ms, holder_owner, holder_token,
-- holder_mode, holder_expires_at, kind, permits.
SELECT * FROM {{schema}}.acquire($1::text, $2::text, $3::text, $4::text, $5::boolean, $6::integer,
                                 $7::integer, $8::integer, $9::boolean, $10::integer, $11::text)

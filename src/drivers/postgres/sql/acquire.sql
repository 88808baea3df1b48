-- acquire: one attempt to take a name; if busy, optionally wait in line
-- (see {{schema}}.acquire in migrations/0001_schema.sql).
-- $1 name, $2 owner, $3 kind, $4 mode, $5 fair, $6 permits, $7 ttl ms,
-- $8 lock delay ms, $9 join the line when busy, $10 line entry ttl ms,
-- $11 wake-up channel prefix, $12 description ('' for none), kept with the
-- hold or line entry (migrations/0002_description.sql): set first, for this
-- transaction only, by the subquery the function's call depends on.
-- $13 weight of a permit ('1' for other kinds), set the same way
-- (migrations/0003_weight.sql).
-- $14 a leader election candidate's value: '' for none, else 'v' and the
-- value (migrations/0004_election.sql), set the same way as baton.value.
-- Returns one row: status, token, ms, holder_owner, holder_token,
-- holder_mode, holder_expires_at, kind, permits.
SELECT a.* FROM (SELECT set_config('baton.description', $12::text, true) || set_config('baton.value', $14::text, true) AS described,
                        set_config('baton.weight', $13::text, true) AS weighed) s,
  LATERAL {{schema}}.acquire($1::text || left(s.described, 0) || left(s.weighed, 0), $2::text, $3::text, $4::text, $5::boolean, $6::integer,
                             $7::integer, $8::integer, $9::boolean, $10::integer, $11::text) a

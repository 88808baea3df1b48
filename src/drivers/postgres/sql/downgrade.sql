-- downgrade: the owner's write hold becomes a read hold with the same token,
-- and the readers queued behind it are admitted.
-- $1 name, $2 owner, $3 token, $4 wake-up channel prefix. Returns done.
SELECT {{schema}}.downgrade($1::text, $2::text, $3::bigint, $4::text) AS done

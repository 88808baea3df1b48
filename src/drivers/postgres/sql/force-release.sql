-- force-release: admin; frees a name, tells holders they lost it and
-- waiters to try again. $1 name, $2 wake-up channel prefix.
-- Returns dropped: the number of holds dropped, lock-delay phantoms included.
SELECT {{schema}}.force_release($1::text, $2::text) AS dropped

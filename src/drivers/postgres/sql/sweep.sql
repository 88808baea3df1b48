-- sweep: bounded state (see {{schema}}.sweep). $1 idle window ms (?fenceTtl=),
-- $2 most names to drop at once. Returns dropped.
SELECT {{schema}}.sweep($1::bigint, $2::integer) AS dropped

-- release: ends a hold (or leaves the line) and hands the name to the next
-- in line, in one transaction.
-- $1 name, $2 owner, $3 token (NULL when the owner may only be waiting),
-- $4 wake-up channel prefix, $5 the wake-up channel of the owner's client
-- when the caller is another client ('' otherwise): a hold ended for
-- another client is told to it ("d|<owner>", see Driver.release).
-- Returns released: whether the owner held it.
SELECT r.released, CASE WHEN r.released AND $5::text <> '' THEN pg_notify($5::text, 'd|' || $2::text)::text END AS told
FROM (SELECT {{schema}}.release($1::text, $2::text, $3::bigint, $4::text) AS released) AS r

-- release: ends a hold (or leaves the line) and hands the name to the next
-- in line, in one transaction.
-- $1 name, $2 owner, $3 token (NULL when the owner may only be waiting),
-- $4 wake-up channel prefix. Returns released: whether the owner held it.
SELECT {{schema}}.release($1::text, $2::text, $3::bigint, $4::text) AS released

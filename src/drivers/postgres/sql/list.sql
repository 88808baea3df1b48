-- list: names in use that start with a prefix, one page in name order.
-- $1 LIKE pattern (the escaped prefix and '%'), $2 the last name of the
-- previous page ('' for the first), $3 page size.
SELECT * FROM {{schema}}.lock_info
 WHERE name LIKE $1::text AND name > $2::text
 ORDER BY name
 LIMIT $3::integer

-- inspect: one name in use, or no row. $1 name.
SELECT * FROM {{schema}}.lock_info WHERE name = $1::text

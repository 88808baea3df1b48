-- list: names in use that start with a prefix, one page in name order.
-- $1 LIKE pattern (the escaped prefix and '%'), $2 the last name of the
-- previous page ('' for the first), $3 page size.
-- The page's names come from the holds and the line (their primary keys
-- lead with the name), never from a scan of `names`, which keeps idle names
-- for fenceTtl: a page costs the same among a million idle names as among
-- none. Each page name is then read like inspect; page_name is there even
-- when a hold ended in between (no lock_info row), so the page keeps its
-- length and the caller's cursor moves on.
SELECT page.name AS page_name, info.* FROM (
  (SELECT DISTINCT name FROM {{schema}}.holds
    WHERE name LIKE $1::text AND name > $2::text AND blocked_until > clock_timestamp()
    ORDER BY name LIMIT $3::integer)
  UNION
  (SELECT DISTINCT name FROM {{schema}}.line
    WHERE name LIKE $1::text AND name > $2::text AND stale_at > clock_timestamp()
    ORDER BY name LIMIT $3::integer)
  ORDER BY name LIMIT $3::integer
) page
-- LIMIT 1 keeps the view from being merged into a join over every name.
LEFT JOIN LATERAL (SELECT * FROM {{schema}}.lock_info li WHERE li.name = page.name LIMIT 1) info ON true
ORDER BY page.name

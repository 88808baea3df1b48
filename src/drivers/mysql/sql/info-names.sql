-- list, first read of a snapshot: names in use that start with a prefix,
-- after a cursor, in byte order, and the clock. ? LIKE pattern, cursor,
-- limit, three times (holds, line, page), then the limit of the page.
-- The page's names come from baton_holds and baton_line, whose primary keys
-- lead with the name, never from a scan of baton_names, which keeps idle
-- names for ?fenceTtl=: a page costs the same among a million idle names as
-- among none. Each is joined to its baton_names row (always there while a
-- hold or entry is: same snapshot).
SELECT n.name, n.kind, n.fair, n.permits, n.last_token, CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED) AS now_us
  FROM (
    (SELECT DISTINCT name FROM baton_holds
      WHERE name LIKE ? AND name > ? AND blocked_until > CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)
      ORDER BY name LIMIT ?)
    UNION
    (SELECT DISTINCT name FROM baton_line
      WHERE name LIKE ? AND name > ? AND stale_at > CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)
      ORDER BY name LIMIT ?)
    ORDER BY name LIMIT ?
  ) page
  JOIN baton_names n ON n.name = page.name
 ORDER BY n.name
